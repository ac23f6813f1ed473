package v1alpha1

import "testing"

// Total is spec.replicas, else the total a Deployment target's release recorded, else the pods
// the release runs.
func TestCanaryTotal(t *testing.T) {
	for name, tc := range map[string]struct {
		spec, release, pods, want int32
	}{
		"spec.replicas":                  {4, 6, 5, 4},
		"recorded by the release":        {0, 6, 5, 6},
		"the target's, between releases": {0, 0, 5, 5},
	} {
		c := &Canary{Spec: CanarySpec{Replicas: tc.spec}, Status: CanaryStatus{ReleaseReplicas: tc.release, Replicas: tc.pods}}
		if got := c.Total(); got != tc.want {
			t.Errorf("%s: Total %d, want %d", name, got, tc.want)
		}
	}
}
