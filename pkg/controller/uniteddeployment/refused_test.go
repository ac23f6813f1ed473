package uniteddeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// TestRefusedWritesAreConditions: every write the API server refuses for a child of a
// UnitedDeployment (a subset workload's create, update or delete, a revision's create) shows on
// the UnitedDeployment as a condition carrying the server's message, stays there while the
// write keeps failing, and goes once the write succeeds.
func TestRefusedWritesAreConditions(t *testing.T) {
	for _, tt := range []struct {
		name string
		// verb is "verb resource" of the refused write.
		verb string
		gvr  schema.GroupVersionResource
		kind string
		// change is what the user does to the settled UnitedDeployment (nil: a new one).
		change func(*appsv1alpha1.UnitedDeployment)
		// want are the conditions, "Type=Status Reason", that report the failure.
		want []string
	}{
		{"StatefulSet create", "create statefulsets", gvrSts, "StatefulSet", nil,
			[]string{"SubsetProvisioned=False ProvisionFailed", "SubsetUpdated=False ProvisionFailed", "SubsetFailure=True FailedCreate"}},
		{"Deployment create", "create deployments", gvrDep, "Deployment", nil,
			[]string{"SubsetProvisioned=False ProvisionFailed", "SubsetUpdated=False ProvisionFailed", "SubsetFailure=True FailedCreate"}},
		{"TApp create", "create tapps", gvrTApp, "TApp", nil,
			[]string{"SubsetProvisioned=False ProvisionFailed", "SubsetUpdated=False ProvisionFailed", "SubsetFailure=True FailedCreate"}},
		{"revision create", "create controllerrevisions", gvrRev, "StatefulSet", nil,
			[]string{"SubsetFailure=True RevisionFailed"}},
		{"revision create on a new template", "create controllerrevisions", gvrRev, "Deployment",
			func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") },
			[]string{"SubsetFailure=True RevisionFailed"}},
		{"template update", "update statefulsets", gvrSts, "StatefulSet",
			func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") },
			[]string{"SubsetUpdated=False Updating", "SubsetFailure=True FailedUpdate"}},
		{"scale", "update tapps", gvrTApp, "TApp",
			func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptrTo[int32](12) },
			[]string{"SubsetFailure=True FailedUpdate"}},
		{"delete of an unlisted subset's workload", "delete deployments", gvrDep, "Deployment",
			func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:2] },
			[]string{"SubsetProvisioned=False ProvisionFailed", "SubsetFailure=True FailedDelete"}},
		{"delete of the old kind after a switch", "delete statefulsets", gvrSts, "StatefulSet",
			func(ud *appsv1alpha1.UnitedDeployment) { setKind(ud, "TApp") },
			[]string{"SubsetProvisioned=False ProvisionFailed", "SubsetFailure=True FailedDelete"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refusal := apierrors.NewForbidden(tt.gvr.GroupResource(), "", errors.New(`exceeded quota: "compute"`))
			var f *fixture
			if tt.change == nil {
				f = newFixture(t, threeZones(tt.kind, 10))
			} else {
				f = settled(t, threeZones(tt.kind, 10))
				f.setSpec("web", tt.change)
			}
			f.fail[tt.verb] = refusal
			// The old kind's workloads go only once their replacements run: let a few syncs
			// bring the new ones up.
			for round := 0; round < 4; round++ {
				err := f.trySync("web")
				if err != nil {
					if !strings.Contains(err.Error(), refusal.Error()) {
						t.Fatalf("sync error %v does not carry the refusal", err)
					}
					wantRefusalReported(t, f, refusal, tt.want)
					break
				}
				if round == 3 {
					t.Fatalf("the refused %s was never tried; last actions %v", tt.verb, f.actions())
				}
				f.observe()
				runAllPods(f)
			}
			// Retried and refused again: still reported, nothing turns healthy.
			f.observe()
			if err := f.trySync("web"); err == nil {
				t.Fatalf("the retry did not fail; actions %v", f.actions())
			}
			f.observe()
			wantRefusalReported(t, f, refusal, tt.want)
			// The server accepts again: the failure goes.
			delete(f.fail, tt.verb)
			f.settle("web", 6)
			if c := meta.FindStatusCondition(f.ud("web").Status.Conditions, appsv1alpha1.SubsetFailure); c == nil || c.Status != metav1.ConditionFalse {
				t.Fatalf("SubsetFailure after the write succeeded: %+v", c)
			}
		})
	}
}

// wantRefusalReported checks that the status last written shows each wanted condition with the
// server's message.
func wantRefusalReported(t *testing.T, f *fixture, refusal error, want []string) {
	t.Helper()
	w := f.writes()
	last := w[len(w)-1]
	if describe(last) != "update uniteddeployments/status web" {
		// An unchanged status is not written again: the stored one must still say it.
		last = nil
	}
	st := f.ud("web").Status
	if last != nil {
		st = *statusOf(t, f.written(len(w)-1))
	}
	for _, cw := range want {
		typ, rest, _ := strings.Cut(cw, "=")
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil || string(c.Status)+" "+c.Reason != rest {
			t.Fatalf("%s is %+v, want %s", typ, c, rest)
		}
		if typ != appsv1alpha1.SubsetUpdated && !strings.Contains(c.Message, refusal.Error()) {
			t.Fatalf("%s message %q does not carry the server's %q", typ, c.Message, refusal.Error())
		}
	}
}

// runAllPods runs every cached workload's pods from its template.
func runAllPods(f *fixture) {
	for _, gvr := range []schema.GroupVersionResource{gvrSts, gvrDep, gvrTApp} {
		for _, w := range f.workloads(gvr) {
			f.runPods(w)
		}
	}
}

// TestStatusNotRewrittenWhileCacheLags: while the cache still shows the UnitedDeployment without
// the controller's own last status write, the same status is not written again, and a changed
// one is written on the version that write produced rather than the stale cached one.
func TestStatusNotRewrittenWhileCacheLags(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	a := f.subsetWorkload(gvrSts, "zone-a")
	notReady := func(i int) {
		for _, o := range f.pods.List() {
			p := o.(*corev1.Pod)
			if p.Name == fmt.Sprintf("%s-%d", a.GetName(), i) {
				p = p.DeepCopy()
				p.Status.Conditions[0].Status = corev1.ConditionFalse
				f.cache(p)
				return
			}
		}
		t.Fatalf("no pod %d of %s", i, a.GetName())
	}
	cachedVersion := f.ud("web").ResourceVersion

	notReady(0)
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	first := f.written(0).(*appsv1alpha1.UnitedDeployment)
	if first.ResourceVersion != cachedVersion {
		t.Fatalf("first write on version %s, want the cached %s", first.ResourceVersion, cachedVersion)
	}
	stored, err := f.client.AppsV1alpha1().UnitedDeployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The cache has not seen that write: nothing to write.
	f.sync("web")
	f.wantActions()

	// A real change is written on top of the controller's own write.
	notReady(1)
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	second := f.written(0).(*appsv1alpha1.UnitedDeployment)
	if second.ResourceVersion != stored.ResourceVersion || second.Status.ReadyReplicas != 8 {
		t.Fatalf("second write on version %s (want %s), readyReplicas %d", second.ResourceVersion, stored.ResourceVersion, second.Status.ReadyReplicas)
	}

	// Once the cache shows it, the cache is what counts again.
	f.observe()
	f.sync("web")
	f.wantActions()
}
