// Package traffic decides what a Canary's HTTPRoute must look like (pure functions, no clients):
// the weights of the stable and the canary Service in every rule that sends to both, and a rule
// that sends requests carrying given headers to the canary only. It turns the difference into a
// JSON patch whose first operation tests metadata.resourceVersion, so that a route someone else
// edited since it was read is refused by the API server instead of overwritten; the controller
// then reads the route again and decides again. See docs/traffic.md.
package traffic
