package workload

import (
	"strings"
	"testing"
)

func TestParseInstanceIDs(t *testing.T) {
	ref := Ref{Kind: TApp, Name: "web"}
	ids, err := ParseInstanceIDs(ref, []string{"4", "0", "10", "4"}, 11)
	if err != nil || strings.Join(ids, ",") != "0,4,10" {
		t.Errorf("got %v %v, want 0,4,10 (numeric order, no duplicates)", ids, err)
	}
	for _, tt := range []struct {
		args     []string
		replicas int32
		want     string
	}{
		{[]string{"5"}, 5, `tapp/web: instance id 5 is out of range: ids are 0 to 4 (replicas 5)`},
		{[]string{"-1"}, 5, `tapp/web: "-1" is not an instance id: ids are 0 to 4 (replicas 5)`},
		{[]string{"007"}, 5, `tapp/web: "007" is not an instance id: ids are 0 to 4 (replicas 5)`},
		{[]string{"1e3"}, 5, `tapp/web: "1e3" is not an instance id: ids are 0 to 4 (replicas 5)`},
		{[]string{"99999999999"}, 5, `tapp/web: "99999999999" is not an instance id: ids are 0 to 4 (replicas 5)`},
		{[]string{"0"}, 0, `tapp/web: instance id 0 is out of range: it has no instances (replicas 0)`},
		{nil, 3, `tapp/web: name at least one instance id: ids are 0 to 2 (replicas 3)`},
	} {
		if _, err := ParseInstanceIDs(ref, tt.args, tt.replicas); err == nil || err.Error() != tt.want {
			t.Errorf("ParseInstanceIDs(%v, %d) = %v, want %s", tt.args, tt.replicas, err, tt.want)
		}
	}
}

func TestKillAndStartPatches(t *testing.T) {
	p, _ := KillPatch(false, []string{"1", "3"})
	if want := `[{"op":"test","path":"/spec/statuses","value":null},{"op":"add","path":"/spec/statuses","value":{"1":"Killed","3":"Killed"}}]`; string(p.Data) != want {
		t.Errorf("KillPatch(absent) = %s, want %s", p.Data, want)
	}
	p, _ = KillPatch(true, []string{"3"})
	if want := `[{"op":"add","path":"/spec/statuses/3","value":"Killed"}]`; string(p.Data) != want {
		t.Errorf("KillPatch(present) = %s, want %s", p.Data, want)
	}
	p, _ = StartPatch([]string{"2", "4"})
	if want := `[{"op":"remove","path":"/spec/statuses/2"},{"op":"remove","path":"/spec/statuses/4"}]`; string(p.Data) != want {
		t.Errorf("StartPatch = %s, want %s", p.Data, want)
	}
}

// Two kill-instance commands racing on a TApp without statuses: the second one's patch fails
// its test instead of replacing the first one's map. Starting an instance twice fails the
// second time instead of doing anything.
func TestInstancePatchesUnderRaces(t *testing.T) {
	doc := `{"spec":{"replicas":5}}`
	first, _ := KillPatch(false, []string{"1"})
	second, _ := KillPatch(false, []string{"3"})
	after, err := applyJSON(t, doc, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyJSON(t, after, second); !IsPreconditionFailure(err) {
		t.Errorf("second kill on a stale read: got %v, want a failed test", err)
	}
	start, _ := StartPatch([]string{"1"})
	after, err = applyJSON(t, after, start)
	if err != nil || strings.Contains(after, `"1"`) {
		t.Fatalf("start: %s %v", after, err)
	}
	if _, err := applyJSON(t, after, start); !IsPreconditionFailure(err) {
		t.Errorf("second start: got %v, want a precondition failure", err)
	}
}
