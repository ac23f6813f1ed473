// Package gcpercent lets the plugin's garbage collector run less often than a server's: a verb
// lives for tens of milliseconds, and at Go's default (GOGC=100, a first collection at 4 MB) it
// spends about a fifth of its CPU collecting garbage during package initialisation and its
// one read (bench/RESULTS.md, "Plugin latency against kubectl"). Imported by main for its init,
// which runs before the heavy initialisation of the Kubernetes packages.
package gcpercent

import (
	"runtime/debug"
	"syscall"
)

// Percent is the plugin's GOGC: the heap may grow to five times what is live before a
// collection. A long-running verb (status -w, get -w, dashboard) holds a few MB live, so its
// heap stays a few tens of MB.
const Percent = 400

func init() {
	// GOGC set by the user wins, as it does for any Go program.
	if _, set := syscall.Getenv("GOGC"); !set {
		debug.SetGCPercent(Percent)
	}
}
