// Package analysis runs the checks of a progressive release (spec.analysis of a Canary): it
// takes measurements through a provider (Prometheus, a Job, the canary's pods), judges each
// with the check's CEL conditions, and turns the measurements so far into a verdict.
//
// It is independent of any controller. A controller keeps an AnalysisCheckStatus per check in
// its own status and, on every sync, calls Runner.Step with the check, that status, a Provider
// built by Env.Provider and the time; Step returns the new status and a Verdict that says
// whether the check is decided and when to call again. Assess is the pure part of Step and can
// be used alone (e.g. by the plugin) to explain a status. See docs/analysis.md.
package analysis
