package bench

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Durations summarises repeated timings.
type Durations []time.Duration

// Sorted returns a sorted copy.
func (d Durations) Sorted() Durations {
	s := append(Durations(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// Median is the middle value, or the mean of the two middle values; 0 when empty.
func (d Durations) Median() time.Duration {
	s := d.Sorted()
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100); 0 when empty.
func (d Durations) Percentile(p float64) time.Duration {
	s := d.Sorted()
	if len(s) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Min and Max are the extremes; 0 when empty.
func (d Durations) Min() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d.Sorted()[0]
}

func (d Durations) Max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d.Sorted()[len(d)-1]
}

// MiB formats a byte count in mebibytes.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Secs formats a duration in seconds with one decimal.
func Secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// Millis formats a duration in milliseconds.
func Millis(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// Ratio formats a/b with two decimals, or "n/a" when b is zero.
func Ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// Verdict says whether a figure meets its target: "meets" or "misses".
func Verdict(ok bool) string {
	if ok {
		return "meets"
	}
	return "MISSES"
}
