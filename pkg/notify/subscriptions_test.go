package notify

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSubscriptions(t *testing.T) {
	namespace := map[string]string{
		SubscribePrefix + "on-paused.slack":    "#releases",
		SubscribePrefix + "on-completed.slack": "#releases",
		SubscribePrefix + "on-aborted.teams":   "ops",
		"unrelated":                            "x",
	}
	canary := map[string]string{
		SubscribePrefix + "on-paused.slack":       "#web; #web-oncall",
		SubscribePrefix + "on-paused.receiver":    "",
		SubscribePrefix + "on-aborted.teams":      "-",
		SubscribePrefix + "on-sync-succeeded.x":   "",
		SubscribePrefix + "on-rolled-back":        "",
		SubscribePrefix + "on-rolled-back.teams.": "ops",
	}
	got, err := ParseSubscriptions(canary, namespace)
	want := Subscriptions{
		OnPaused:     {{Service: "receiver"}, {Service: "slack", Recipient: "#web"}, {Service: "slack", Recipient: "#web-oncall"}},
		OnCompleted:  {{Service: "slack", Recipient: "#releases"}},
		OnRolledBack: {{Service: "teams.", Recipient: "ops"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "subscribe.on-sync-succeeded.x") || !strings.Contains(err.Error(), "subscribe.on-rolled-back:") {
		t.Errorf("error %v, want the two annotations that are not subscriptions named", err)
	}
}

func TestSent(t *testing.T) {
	s, err := ParseSent("")
	if err != nil || len(s) != 0 {
		t.Fatalf("empty record: %v, %v", s, err)
	}
	slack, hook := Destination{"slack", "#a"}, Destination{Service: "hook"}
	s.Add(OnPaused, "step 1", slack)
	s.Add(OnPaused, "step 1", hook)
	if !s.Has(OnPaused, "step 1", slack) || !s.Has(OnPaused, "step 1", hook) || s.Has(OnPaused, "step 2", slack) {
		t.Errorf("record %v", s)
	}
	s.Add(OnPaused, "step 2", hook) // a new occurrence replaces the old one
	if s.Has(OnPaused, "step 1", slack) || !s.Has(OnPaused, "step 2", hook) {
		t.Errorf("record after a new occurrence %v", s)
	}
	back, err := ParseSent(s.String())
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("round trip: %v, %v", back, err)
	}
	cached := Sent{}
	cached.Add(OnPaused, "step 2", slack)
	cached.Add(OnCompleted, "r1", slack)
	cached.Merge(s)
	if !cached.Has(OnPaused, "step 2", hook) || !cached.Has(OnPaused, "step 2", slack) || !cached.Has(OnCompleted, "r1", slack) {
		t.Errorf("merged %v", cached)
	}
	if _, err := ParseSent("{not json"); err == nil {
		t.Error("an unreadable record was read")
	}
}
