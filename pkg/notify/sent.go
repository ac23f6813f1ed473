package notify

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Sent is what was delivered for a Canary, per trigger: the trigger's last occurrence and the
// destinations it reached. It is kept in the Canary's annotation AnnotationSent, not in its
// status: the canary controller replaces the whole status at each of its writes, and a
// second writer there would make one of them conflict on every change, whereas a merge patch
// of one annotation touches nothing else. A trigger keeps one occurrence, its latest: a new
// one replaces the record, so the annotation stays as small as the subscriptions.
type Sent map[string]SentTrigger

// SentTrigger is the record of one trigger.
type SentTrigger struct {
	Occurrence string   `json:"occurrence"`
	To         []string `json:"to"`
}

// ParseSent reads the annotation's value; an empty or unreadable one is an empty record (the
// agent then sends what fires again rather than nothing).
func ParseSent(v string) (Sent, error) {
	s := Sent{}
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Sent{}, fmt.Errorf("annotation %s is not a record of sent notifications: %w", AnnotationSent, err)
	}
	return s, nil
}

// Has reports whether the occurrence of trigger was delivered to d.
func (s Sent) Has(trigger, occurrence string, d Destination) bool {
	t, ok := s[trigger]
	return ok && t.Occurrence == occurrence && slices.Contains(t.To, d.String())
}

// Add records a delivery, replacing the trigger's record of an older occurrence.
func (s Sent) Add(trigger, occurrence string, d Destination) {
	t := s[trigger]
	if t.Occurrence != occurrence {
		t = SentTrigger{Occurrence: occurrence}
	}
	if !slices.Contains(t.To, d.String()) {
		t.To = append(t.To, d.String())
		slices.Sort(t.To)
	}
	s[trigger] = t
}

// Merge adds every delivery of o that s lacks for the same occurrence, and o's records of
// triggers s does not know (o is a newer record of this process, the cache may lag it).
func (s Sent) Merge(o Sent) {
	for trigger, t := range o {
		cur, ok := s[trigger]
		if !ok || cur.Occurrence != t.Occurrence {
			s[trigger] = SentTrigger{Occurrence: t.Occurrence, To: slices.Clone(t.To)}
			continue
		}
		for _, to := range t.To {
			if !slices.Contains(cur.To, to) {
				cur.To = append(cur.To, to)
			}
		}
		slices.Sort(cur.To)
		s[trigger] = cur
	}
}

// String is the annotation's value.
func (s Sent) String() string {
	b, _ := json.Marshal(s) // a map of strings: cannot fail
	return string(b)
}
