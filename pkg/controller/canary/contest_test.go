package canary

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// setWeights is another writer's update of the route to stable/canary weights, recorded under
// its field manager, at resourceVersion rv (the fake API server keeps the one it is given).
func (f *trafficFixture) setWeights(manager string, rv int, stable, canary int32) {
	f.t.Helper()
	r, err := f.gateway.GatewayV1().HTTPRoutes(ns).Get(context.Background(), "checkout", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	r.Spec.Rules[0].BackendRefs[0].Weight, r.Spec.Rules[0].BackendRefs[1].Weight = ptr.To(stable), ptr.To(canary)
	r.ResourceVersion = strconv.Itoa(rv)
	if err := f.gateway.Tracker().Update(gatewayv1.SchemeGroupVersion.WithResource("httproutes"), r, ns, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		f.t.Fatal(err)
	}
}

// wantContested checks that the Canary is Degraded for reason, naming the field manager, with
// a Warning Event of that reason.
func (f *fixture) wantContested(reason, manager string) {
	f.t.Helper()
	f.wantEvent("Warning " + reason)
	cn := f.canary()
	deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionDegraded)
	if cn.Status.Phase != v1alpha1.CanaryDegraded || deg == nil || deg.Status != metav1.ConditionTrue ||
		deg.Reason != reason || !strings.Contains(deg.Message, fmt.Sprintf("field manager %q", manager)) {
		f.t.Fatalf("phase %s, Degraded %+v: want Degraded, reason %s naming field manager %q", cn.Status.Phase, deg, reason, manager)
	}
}

// reads counts the reads (gets) of a resource in a fake clientset's actions: the agent's reads
// from the API server, not from its cache.
func reads(actions []k8stesting.Action, resource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "get" && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// routeGets counts the reads of the route from the API server.
func (f *trafficFixture) routeGets() int { return reads(f.gateway.Actions(), "httproutes") }

func testPatchAt(rv int, ops string) string {
	return patchRoute + `[{"op":"test","path":"/metadata/resourceVersion","value":"` + strconv.Itoa(rv) + `"},` + ops + `]`
}

// syncCounting runs one sync after refreshing the listers and checks its exact API actions
// and how many times it read the route from the API server.
func (f *trafficFixture) syncCounting(gets int, want ...string) {
	f.t.Helper()
	f.refreshRoute()
	f.refresh()
	before := f.routeGets()
	got := f.sync()
	if !slices.Equal(got, want) {
		f.t.Fatalf("actions:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
	if n := f.routeGets() - before; n != gets {
		f.t.Fatalf("the sync read the route %d times from the API server, want %d", n, gets)
	}
}

// routeAt20 is a fixture whose Canary's step 1 (2 pods, weight 20) is available and has just
// set the route's weights.
func routeAt20(t *testing.T) *trafficFixture {
	t.Helper()
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), nil, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.syncCounting(0, routePatch(weightOps(80, 20)), writeStatus)
	return f
}

// A controller that keeps setting the route's weights back (as Argo Rollouts' Gateway API
// plugin does for a route its Rollout names) is not fought: the agent corrects the first
// changes back, and at the third in a row by the same field manager it stops writing the route
// and reports the Canary Degraded, naming the manager; nothing of the release moves. The route
// is read from the API server (for its managedFields) once per change back, never on a resync.
// A change by someone else (a person setting the weights by hand) lets the agent resume.
func TestTrafficAnotherControllerOnTheRoute(t *testing.T) {
	f := routeAt20(t)

	// The stable Deployment follows the route's weight as observed: at 0% on the canary it
	// needs all 10 pods, at 20%, 8.
	restore := []string{}
	for rv := 200; rv < 200+contestLimit-1; rv++ {
		f.setWeights("argo-rollouts", rv, 100, 0)
		f.syncCounting(1, append([]string{testPatchAt(rv, weightOps(80, 20))}, append(restore, writeStatus)...)...)
		f.syncCounting(0, patchStable+replicas(8), writeStatus) // its own write seen: the count goes on
		restore = []string{patchStable + replicas(10)}
	}
	f.setWeights("argo-rollouts", 300, 100, 0)
	f.syncCounting(1, writeStatus)
	f.wantContested(v1alpha1.ReasonHTTPRouteContested, "argo-rollouts")
	if c := f.condition(); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonHTTPRouteContested {
		t.Fatalf("TrafficRoutingReady %+v, want False, %s", c, v1alpha1.ReasonHTTPRouteContested)
	}
	if w := f.route().CanaryWeight; w != 0 {
		t.Fatalf("the route was written: canary weight %d", w)
	}
	f.syncCounting(0) // a resync: no write, no read

	// The other controller writes again: still nothing written, the status unchanged.
	f.setWeights("argo-rollouts", 301, 100, 0)
	f.syncCounting(1)

	// A person changes the weights by hand once the other controller is gone: the agent resumes.
	f.setWeights("kubectl-edit", 302, 90, 10)
	// (The stable Deployment keeps what the route's weight, as observed, needs: 9 of 10.)
	f.syncCounting(1, testPatchAt(302, weightOps(80, 20)), patchStable+replicas(9), writeStatus)
	if cn := f.canary(); cn.Status.Phase == v1alpha1.CanaryDegraded {
		t.Fatalf("still Degraded: %s", cn.Status.Message)
	}
	f.wantRoute(20, false)
}

// A person's one-off edit of the weights is corrected at once, as before; so are edits by
// different managers in turn, and a change back after the route agreed with the release
// starts the count again: only one manager changing the weights back contestLimit times in a
// row stops the agent.
func TestTrafficOneOffEditsAreCorrected(t *testing.T) {
	f := routeAt20(t)
	rv := 200
	edit := func(manager string, stable, canary int32, want ...string) {
		t.Helper()
		rv++
		f.setWeights(manager, rv, stable, canary)
		gets := 1
		if canary == 20 {
			gets = 0 // the route agrees with the release: nothing to find out
		}
		f.syncCounting(gets, want...)
	}
	for i := 0; i < 3; i++ {
		edit("kubectl-edit", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), writeStatus)
		edit("someone-else", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), writeStatus)
	}
	edit("argo-rollouts", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), writeStatus)
	edit("argo-rollouts", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), writeStatus)
	edit("argo-rollouts", 80, 20, patchStable+replicas(8), writeStatus) // it agrees: the count starts again
	edit("argo-rollouts", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), patchStable+replicas(10), writeStatus)
	edit("argo-rollouts", 100, 0, testPatchAt(rv+1, weightOps(80, 20)), writeStatus)
	if cn := f.canary(); cn.Status.Phase == v1alpha1.CanaryDegraded {
		t.Fatalf("Degraded: %s", cn.Status.Message)
	}
	f.wantRoute(20, false)
}

// managedEntry is a managedFields entry of an update by manager (through subresource sub, ""
// for none), at seconds after start, owning fields.
func managedEntry(manager, sub string, at int, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Subresource: sub,
		Time: ptr.To(metav1.NewTime(start.Add(time.Duration(at) * time.Second))), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// resumeAs is another writer's update of Deployment checkout to spec.paused false, under its
// field manager, at resourceVersion rv.
func (f *fixture) resumeAs(manager string, rv int) {
	f.t.Helper()
	d := f.deployment("checkout")
	d.Spec.Paused, d.ResourceVersion = false, strconv.Itoa(rv)
	// It applies the Deployment as it knows it: spec.paused false is not serialized, so it owns
	// no such field, only others (the fake API server does not record managedFields for
	// Deployments: they are set as the API server would).
	d.ManagedFields = append(d.ManagedFields, managedEntry(manager, "", rv, `{"f:spec":{"f:replicas":{}}}`))
	if err := f.kube.Tracker().Update(deploymentsGVR, d, ns, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		f.t.Fatal(err)
	}
}

// scaleAs is another writer's change of Deployment checkout's spec.replicas, under its field
// manager (through the scale subresource, as an autoscaler's), at resourceVersion rv.
func (f *fixture) scaleAs(manager string, rv int, replicas int32) {
	f.t.Helper()
	d := f.deployment("checkout")
	d.Spec.Replicas, d.ResourceVersion = ptr.To(replicas), strconv.Itoa(rv)
	d.ManagedFields = []metav1.ManagedFieldsEntry{managedEntry(manager, "scale", rv, `{"f:spec":{"f:replicas":{}}}`)}
	if err := f.kube.Tracker().Update(deploymentsGVR, d, ns, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		f.t.Fatal(err)
	}
}

// stepReading is step, checking too that the sync read Deployments from the API server n times.
func (f *fixture) stepReading(n int, want ...string) {
	f.t.Helper()
	before := reads(f.kube.Actions(), "deployments")
	f.step(want...)
	if got := reads(f.kube.Actions(), "deployments") - before; got != n {
		f.t.Fatalf("the sync read a Deployment %d times from the API server, want %d", got, n)
	}
}

// A held Deployment target resumed by hand is paused again (TestDeploymentTargetHeldPausedBetweenReleases);
// one that another controller keeps resuming (a GitOps tool applying it without spec.paused) is
// paused again twice, then the agent stops and the Canary is Degraded, naming the manager. A
// change by someone else lets the agent pause it again.
func TestDeploymentTargetPauseContested(t *testing.T) {
	f := heldTarget(t)
	pause := `patch deployments checkout {"spec":{"paused":true}}`
	for rv := 100; rv < 100+contestLimit-1; rv++ {
		f.resumeAs("argocd-controller", rv)
		f.stepReading(1, pause)
		f.stepReading(0)
	}
	f.resumeAs("argocd-controller", 200)
	f.stepReading(1, "update canaries/status checkout")
	f.wantContested(v1alpha1.ReasonDeploymentContested, "argocd-controller")
	f.stepReading(0)

	f.resumeAs("kubectl-rollout", 300) // someone else: the agent pauses it again
	f.stepReading(1, pause, "update canaries/status checkout")
	f.status(v1alpha1.CanaryCompleted, 0)
}

// lastWriter names the manager that owns the field, the newest one when several did (an atomic
// list has one owner; a field set by two managers to the same value has both), else the newest
// entry's (a change that removed the field leaves no owner); never the agent, nor a status write.
func TestLastWriter(t *testing.T) {
	entry := managedEntry
	rules := `{"f:spec":{"f:rules":{}}}`
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   string
	}{
		{"owner", []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", 1, `{"f:metadata":{}}`), entry("argo-rollouts", "", 0, rules)}, "argo-rollouts"},
		{"newest owner", []metav1.ManagedFieldsEntry{entry("a", "", 2, rules), entry("b", "", 3, rules)}, "b"},
		{"not the agent", []metav1.ManagedFieldsEntry{entry(v1alpha1.FieldManagerAgent, "", 5, rules), entry("argo-rollouts", "", 0, `{"f:spec":{"f:hostnames":{}}}`)}, "argo-rollouts"},
		{"not a status write", []metav1.ManagedFieldsEntry{entry("status-writer", "status", 9, rules), entry("x", "", 1, `{"f:spec":{}}`)}, "x"},
		{"a scale write", []metav1.ManagedFieldsEntry{entry("horizontal-pod-autoscaler", "scale", 9, `{"f:spec":{"f:rules":{}}}`)}, "horizontal-pod-autoscaler"},
		{"none", nil, ""},
	} {
		if got := lastWriter(tc.fields, "f:spec", "f:rules"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A stable Deployment scaled by hand during a release is scaled back, as before; one that
// another controller keeps scaling (an autoscaler, an Argo Rollout's workloadRef) is scaled back
// twice, then the agent stops and the Canary is Degraded, naming the manager.
func TestStableReplicasContested(t *testing.T) {
	f := newFixture(t, stepsCanary(nil,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Pause: &v1alpha1.CanaryPause{}},
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")}), newStable(10))
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.step(patchStable+replicas(8), writeStatus)
	f.scaleAs("kubectl", 50, 9) // a person's kubectl scale: scaled back
	f.stepReading(1, patchStable+replicas(8))
	for rv := 100; rv < 100+contestLimit-1; rv++ {
		f.scaleAs("horizontal-pod-autoscaler", rv, 10)
		f.stepReading(1, patchStable+replicas(8))
	}
	f.scaleAs("horizontal-pod-autoscaler", 200, 10)
	f.stepReading(1, writeStatus)
	f.wantContested(v1alpha1.ReasonDeploymentContested, "horizontal-pod-autoscaler")
	f.stepReading(0)
	f.scaleAs("kubectl", 300, 10) // someone else: the agent scales it again
	f.stepReading(1, patchStable+replicas(8), writeStatus)
}
