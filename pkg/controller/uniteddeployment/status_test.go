package uniteddeployment

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// TestComputeStatus checks the conditions and revisions computed from what a sync did, without
// any client: every refused write shows as a condition carrying the server's message, and
// nothing reports healthy while one keeps failing.
func TestComputeStatus(t *testing.T) {
	const serverSays = `admission webhook "quota.example" denied the request: exceeded quota`
	sts := subsetKindOf("StatefulSet")
	provisioned := func(rev string) *result {
		return &result{alloc: map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4}, current: rev, updated: rev, subsets: &subsetPlan{kind: sts}}
	}
	for _, tt := range []struct {
		name   string
		result func(w *world, rev string) *result
		// want maps each condition type to "Status Reason"; "" means absent.
		want map[string]string
		// message is a substring of every condition that is not healthy.
		message string
		current func(w *world) string
	}{{
		name:   "all provisioned and updated",
		result: func(_ *world, rev string) *result { return provisioned(rev) },
		want:   map[string]string{"SubsetProvisioned": "True Provisioned", "SubsetUpdated": "True Updated", "SubsetFailure": "False NoFailure"},
	}, {
		name: "create refused",
		result: func(_ *world, rev string) *result {
			r := provisioned(rev)
			r.subsets.creates = []creation{{}}
			r.provisionFailed = true
			r.hold(appsv1alpha1.ReasonProvisionFailed, "zone-a")
			r.failures = []failure{{appsv1alpha1.ReasonFailedCreate, "creating StatefulSet of subset zone-a: " + serverSays}}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "False ProvisionFailed", "SubsetUpdated": "False ProvisionFailed", "SubsetFailure": "True FailedCreate"},
		message: "zone-a",
	}, {
		name: "delete refused",
		result: func(_ *world, rev string) *result {
			r := provisioned(rev)
			r.provisionFailed = true
			r.failures = []failure{{appsv1alpha1.ReasonFailedDelete, "deleting StatefulSet web-zone-a-0: " + serverSays}}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "False ProvisionFailed", "SubsetUpdated": "True Updated", "SubsetFailure": "True FailedDelete"},
		message: serverSays,
	}, {
		name: "template update refused",
		result: func(_ *world, rev string) *result {
			r := provisioned(rev)
			r.hold(appsv1alpha1.ReasonUpdating, "zone-b")
			r.failures = []failure{{appsv1alpha1.ReasonFailedUpdate, "updating StatefulSet web-zone-b-1 of subset zone-b: " + serverSays}}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "True Provisioned", "SubsetUpdated": "False Updating", "SubsetFailure": "True FailedUpdate"},
		message: "zone-b",
	}, {
		name: "revision refused: provisioning not reached, its conditions not set",
		result: func(_ *world, _ string) *result {
			return &result{alloc: map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4},
				failures: []failure{{appsv1alpha1.ReasonRevisionFailed, "revision of spec.template: " + serverSays}}}
		},
		want:    map[string]string{"SubsetProvisioned": "", "SubsetUpdated": "", "SubsetFailure": "True RevisionFailed"},
		message: serverSays,
	}, {
		name: "old kind kept until its replacement is ready",
		result: func(_ *world, rev string) *result {
			r := provisioned(rev)
			r.subsets.waiting = []string{"Deployment web-zone-a-9 (subset zone-a)"}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "False Replacing", "SubsetUpdated": "True Updated", "SubsetFailure": "False NoFailure"},
		message: "Deployment web-zone-a-9",
	}, {
		name: "held and failing for several reasons: the first reason, every message",
		result: func(_ *world, rev string) *result {
			r := provisioned(rev)
			r.hold(appsv1alpha1.ReasonUpdating, "zone-c")
			r.hold(appsv1alpha1.ReasonPaused, "zone-a")
			r.failures = []failure{{appsv1alpha1.ReasonInvalidReplicas, "first"}, {appsv1alpha1.ReasonFailedUpdate, serverSays}}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "True Provisioned", "SubsetUpdated": "False Paused", "SubsetFailure": "True InvalidReplicas"},
		message: "",
	}, {
		name: "every pod updated and ready: the updated revision becomes current",
		result: func(w *world, rev string) *result {
			r := provisioned(rev)
			r.current = w.revisions[0].Name
			return r
		},
		want:    map[string]string{"SubsetFailure": "False NoFailure"},
		current: func(w *world) string { return w.revisions[1].Name },
	}, {
		name: "every pod updated and ready but a create failed: not current",
		result: func(w *world, rev string) *result {
			r := provisioned(rev)
			r.current = w.revisions[0].Name
			r.subsets.creates = []creation{{}}
			r.provisionFailed = true
			r.failures = []failure{{appsv1alpha1.ReasonFailedCreate, serverSays}}
			return r
		},
		want:    map[string]string{"SubsetProvisioned": "False ProvisionFailed", "SubsetFailure": "True FailedCreate"},
		message: serverSays,
		current: func(w *world) string { return w.revisions[0].Name },
	}} {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := settledWorld("StatefulSet")
			rev2 := w.revision(2, func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") })
			for _, z := range []struct {
				name string
				n    int
			}{{"zone-a", 3}, {"zone-b", 3}, {"zone-c", 4}} {
				w.readyPods("StatefulSet", z.name, rev2, z.n)
			}
			r := tt.result(w, rev2)
			st := computeStatus(w.observation(), r)
			// SubsetFailure carries every failure's message, the server's words included.
			var msgs []string
			for _, f := range r.failures {
				msgs = append(msgs, f.message)
			}
			if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.SubsetFailure); c == nil || c.Message != strings.Join(msgs, "; ") {
				t.Errorf("SubsetFailure %+v, want the message %q", c, strings.Join(msgs, "; "))
			}
			for ct, want := range tt.want {
				c := meta.FindStatusCondition(st.Conditions, ct)
				if want == "" {
					if c != nil {
						t.Errorf("%s set: %+v", ct, c)
					}
					continue
				}
				if c == nil || string(c.Status)+" "+c.Reason != want {
					t.Errorf("%s is %+v, want %s", ct, c, want)
					continue
				}
				if c.Status != metav1.ConditionTrue && ct != appsv1alpha1.SubsetFailure || c.Status == metav1.ConditionTrue && ct == appsv1alpha1.SubsetFailure {
					if !strings.Contains(c.Message, tt.message) {
						t.Errorf("%s message %q does not say %q", ct, c.Message, tt.message)
					}
				}
			}
			if tt.current != nil && st.CurrentRevision != tt.current(w) {
				t.Errorf("current revision %s, want %s", st.CurrentRevision, tt.current(w))
			}
			if st.Replicas != 10 || st.ReadyReplicas != 10 || len(st.SubsetStatuses) != 3 || st.SubsetStatuses[2].Replicas != 4 {
				t.Errorf("counts %+v", st)
			}
		})
	}
}

// TestUnreadMemberNeverCountsAsUpdatedReady: a member the sync could not read (unreachable, or
// its caches still filling after it came back) keeps its last counts in the totals, but none of
// its pods counts as updated and ready: which of them are, nobody knows. Its last status said 4
// ready and 2 updated, which would have read as 2 updated-ready (the least it could be is 0).
func TestUnreadMemberNeverCountsAsUpdatedReady(t *testing.T) {
	for _, tt := range []struct {
		name   string
		member *memberState
	}{
		{"unreachable", &memberState{reason: appsv1alpha1.ReasonClusterUnreachable, message: "cluster fleet-system/m is unreachable: connection refused"}},
		{"caches filling", &memberState{waiting: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, rev1 := settledWorld("StatefulSet")
			ref := appsv1alpha1.ClusterProfileReference{Namespace: "fleet-system", Name: "m"}
			w.ud.Spec.Topology.Subsets[2].ClusterProfileRef = &ref
			rev2 := w.revision(2, func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") })
			w.readyPods("StatefulSet", "zone-a", rev2, 3)
			w.readyPods("StatefulSet", "zone-b", rev2, 3)
			w.ud.Status.SubsetStatuses = []appsv1alpha1.SubsetStatus{{Name: "zone-c", Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 2,
				Cluster: &appsv1alpha1.SubsetClusterStatus{ClusterProfile: "fleet-system/m", Reachable: true}}}
			obs := w.observation()
			obs.members = map[string]*memberState{"fleet-system/m": tt.member}
			r := &result{alloc: map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4}, current: rev1, updated: rev2, subsets: &subsetPlan{kind: subsetKindOf("StatefulSet")}}
			r.hold(appsv1alpha1.ReasonClusterUnreachable, "zone-c")
			st := computeStatus(obs, r)
			if st.Replicas != 10 || st.ReadyReplicas != 10 || st.UpdatedReplicas != 8 {
				t.Errorf("totals %d replicas, %d ready, %d updated; want 10, 10, 8 (the member's last counts kept)", st.Replicas, st.ReadyReplicas, st.UpdatedReplicas)
			}
			if st.UpdatedReadyReplicas != 6 {
				t.Errorf("updated and ready: %d, want 6 (the hub's only: the member's are unknown)", st.UpdatedReadyReplicas)
			}
			if st.CurrentRevision != rev1 {
				t.Errorf("current revision %s, want %s while a member is unread", st.CurrentRevision, rev1)
			}
		})
	}
}
