package workload

import "testing"

// The retry patch moves spec.retries on by one from the value read, whether the field was
// there or not, and of two retries that read the same value only the first applies.
func TestRetryPatch(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		retries int64
		present bool
		want    string
	}{
		{`{"spec":{"retries":1,"rollback":true,"approvedBatch":3}}`, 1, true, `{"spec":{"approvedBatch":0,"retries":2,"rollback":false}}`},
		{`{"spec":{"rollback":true}}`, 0, false, `{"spec":{"approvedBatch":0,"retries":1,"rollback":false}}`},
	} {
		p, err := RetryPatch(tc.retries, tc.present)
		if err != nil {
			t.Fatal(err)
		}
		got, err := applyJSON(t, tc.doc, p)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.doc, got, err, tc.want)
		}
		if _, err := applyJSON(t, got, p); err == nil {
			t.Errorf("a second retry that read %s applied too", tc.doc)
		}
	}
}
