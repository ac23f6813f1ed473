package notify

import (
	"fmt"
	"sort"
	"strings"
)

// Destination is where one notification goes: a service and one of its recipients ("" for a
// service that has one destination, such as a webhook or a Slack incoming webhook).
type Destination struct {
	Service   string
	Recipient string
}

func (d Destination) String() string {
	if d.Recipient == "" {
		return d.Service
	}
	return d.Service + ":" + d.Recipient
}

// Subscriptions maps a trigger's name to its destinations.
type Subscriptions map[string][]Destination

// ParseSubscriptions reads the subscriptions of a Canary's annotations over its namespace's:
// notifications.apps.workload.dev/subscribe.<trigger>.<service>: "<recipients>", recipients
// separated by commas or semicolons (none: the service's own destination). A Canary's
// annotation for a trigger and service replaces its namespace's for the same pair; an empty
// list of recipients, "-", on the Canary turns the namespace's off. Errors name the
// annotations that are not subscriptions to a built-in trigger; the others are still read.
func ParseSubscriptions(canary, namespace map[string]string) (Subscriptions, error) {
	pairs := map[[2]string][]string{}
	var errs []string
	for _, annotations := range []map[string]string{namespace, canary} {
		for k, v := range annotations {
			if !strings.HasPrefix(k, SubscribePrefix) {
				continue
			}
			trigger, service, ok := strings.Cut(strings.TrimPrefix(k, SubscribePrefix), ".")
			if _, known := TriggerNamed(trigger); !ok || !known || !strings.HasPrefix(trigger, triggerPrefix) || service == "" {
				errs = append(errs, fmt.Sprintf("%s: not %s<trigger>.<service> with a trigger among %s", k, SubscribePrefix, strings.Join(TriggerNames(), ", ")))
				continue
			}
			pairs[[2]string{trigger, service}] = recipients(v)
		}
	}
	subs := Subscriptions{}
	for p, rs := range pairs {
		for _, r := range rs {
			subs[p[0]] = append(subs[p[0]], Destination{Service: p[1], Recipient: r})
		}
	}
	for _, ds := range subs {
		sort.Slice(ds, func(i, j int) bool { return ds[i].String() < ds[j].String() })
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return subs, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return subs, nil
}

// recipients splits an annotation's value; "-" means none.
func recipients(v string) []string {
	v = strings.TrimSpace(v)
	if v == "-" {
		return nil
	}
	var out []string
	for _, r := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ';' }) {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}
