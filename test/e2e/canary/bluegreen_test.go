package canary

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// The blue-green tests run beside the capacity and surge watchers (the surge limit is twice the
// replicas: the peak of a blue-green release by nature) a watcher of the EndpointSlices the
// control plane computes for the active Service, which fails a test the moment they hold pods of
// both versions.

const (
	activeService  = "checkout"
	previewService = "checkout-preview"
)

// setupBlueGreen is setup with the stable pods labelled for blue-green already (so that the
// release does not roll them: their Deployment's own rolling update would not keep 10
// available), both Services, and the active Service's watcher.
func setupBlueGreen(t *testing.T) *env {
	t.Helper()
	stable := stableDeployment()
	stable.Spec.Template.Labels = maps.Clone(stable.Spec.Template.Labels)
	stable.Spec.Template.Labels[v1alpha1.LabelBlueGreen] = stableName
	e := setupWith(t, stable)
	e.limit.Store(2 * replicas)
	for _, n := range []string{activeService, previewService} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "checkout"},
				Ports:    []corev1.ServicePort{{Port: 80}},
			},
		}
		if _, err := e.Kube.CoreV1().Services(e.NS).Create(e.Ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := invariant.OneVersion(e.Ctx, e.Kube, e.NS, activeService, stableName, canaryName)
	w.OnViolation(func(v string) {
		t.Errorf("active Service: %s", v)
		e.Cancel() // fail now: every wait of the test ends at once
	})
	t.Cleanup(func() {
		w.Stop()
		t.Logf("active Service watcher: %d EndpointSlice states, at most %s", w.Events(), w.Worst())
	})
	return e
}

// createBlueGreen releases nginx 1.27 as checkout-canary, blue-green.
func (e *env) createBlueGreen(edit func(*v1alpha1.CanarySpec)) {
	e.T.Helper()
	e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) {
		s.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: activeService, PreviewService: previewService}
		if edit != nil {
			edit(s)
		}
	})
	e.limit.Store(2 * replicas) // createSteps set the canary surge bound, which does not apply
}

// endpoints counts the ready endpoints of a Service by version, from its EndpointSlices.
func (e *env) endpoints(ctx context.Context, service string) (map[string]int, error) {
	list, err := e.Kube.DiscoveryV1().EndpointSlices(e.NS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.TargetRef != nil && ptr.Deref(ep.Conditions.Ready, false) {
				out[invariant.VersionOf(ep.TargetRef.Name, []string{stableName, canaryName})]++
			}
		}
	}
	return out, nil
}

// waitEndpoints waits until service's endpoints are every replica of version, ready, and none of
// another.
func (e *env) waitEndpoints(service, version string) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, fmt.Sprintf("Service %s to select the %d pods of %s only", service, replicas, version), func(ctx context.Context) (bool, string, error) {
		got, err := e.endpoints(ctx, service)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(got) == 1 && got[version] == replicas, fmt.Sprintf("ready endpoints by version: %v", got), nil
	})
}

// switchedTo reports whether the agent ever switched the active Service to the new pods, from
// its Events.
func (e *env) switchedTo(version string) bool {
	e.T.Helper()
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{FieldSelector: "reason=" + v1alpha1.EventServiceSwitched})
	if err != nil {
		e.T.Fatal(err)
	}
	want := fmt.Sprintf("Service %q selects the pods of Deployment %q", activeService, version)
	return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool { return strings.HasPrefix(ev.Message, want) })
}

// Promoted by hand: the preview comes up at full size behind the preview Service while the
// active one keeps the old pods, the switch moves every endpoint at once, and the old version is
// scaled down only after the delay.
func TestBlueGreenPromoteSwitchesThenScalesDown(t *testing.T) {
	e := setupBlueGreen(t)
	e.createBlueGreen(func(s *v1alpha1.CanarySpec) { s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](5) })
	c := e.waitPhase(v1alpha1.CanaryPaused)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != stableName || bg.Preview != canaryName {
		t.Fatalf("status.blueGreen %+v", bg)
	}
	e.waitEndpoints(previewService, canaryName)
	e.waitEndpoints(activeService, stableName)

	e.promote(c)
	e.waitEndpoints(activeService, canaryName)
	switched := time.Now()
	e.waitDeployments("the old version scaled down", func(stable, _ *appsv1.Deployment) bool { return *stable.Spec.Replicas == 0 })
	if d := time.Since(switched); d < 4*time.Second { // the status keeps whole seconds
		t.Errorf("the old version was scaled down %s after the switch, before the delay of 5s", d)
	}
	c = e.waitPhase(v1alpha1.CanaryCompleted)
	canarySizes, stableSizes := e.watch.check()
	if !slices.Equal(canarySizes, []int32{replicas}) || !slices.Equal(stableSizes, []int32{replicas, 0}) {
		t.Errorf("canary sizes %v, stable sizes %v; want [10] and [10 0]", canarySizes, stableSizes)
	}
	if c.Status.BlueGreen.Active != canaryName {
		t.Errorf("status.blueGreen %+v", c.Status.BlueGreen)
	}
}

// autoPromotionSeconds switches by itself once the preview was up that long.
func TestBlueGreenAutoPromotion(t *testing.T) {
	e := setupBlueGreen(t)
	e.createBlueGreen(func(s *v1alpha1.CanarySpec) {
		s.BlueGreen.AutoPromotionSeconds = ptr.To[int32](3)
		s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](0)
	})
	e.waitPhase(v1alpha1.CanaryCompleted)
	e.waitEndpoints(activeService, canaryName)
	if c := e.canary(); c.Spec.ApprovedBatch != 0 {
		t.Errorf("approvedBatch %d: promoted by someone", c.Spec.ApprovedBatch)
	}
	e.WaitEvent(v1alpha1.EventPauseEnded)
}

// An abort after the switch, then, once the release restarted, one before it: each time the
// active Service ends on the old pods, which were never scaled down, and the new version goes.
func TestBlueGreenAbortAfterAndBeforeTheSwitch(t *testing.T) {
	e := setupBlueGreen(t)
	e.createBlueGreen(func(s *v1alpha1.CanarySpec) { s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](600) })
	e.promote(e.waitPhase(v1alpha1.CanaryPaused))
	e.waitEndpoints(activeService, canaryName)
	e.patchSpec(`{"rollback":true}`)
	e.waitPhase(v1alpha1.CanaryRolledBack)
	e.waitEndpoints(activeService, stableName)

	e.patchSpec(`{"rollback":false,"approvedBatch":0}`)
	e.waitPhase(v1alpha1.CanaryPaused)
	e.waitEndpoints(previewService, canaryName)
	e.patchSpec(`{"rollback":true}`)
	e.waitPhase(v1alpha1.CanaryRolledBack)
	e.waitEndpoints(activeService, stableName)
	e.waitDeployments("the new version scaled to 0", func(_, canary *appsv1.Deployment) bool { return *canary.Spec.Replicas == 0 })
	_, stableSizes := e.watch.check()
	if !slices.Equal(stableSizes, []int32{replicas}) {
		t.Errorf("stable sizes %v: the old version must never be scaled down", stableSizes)
	}
}

// A failed pre-promotion check aborts before the switch; a failed post-promotion check switches
// back at once, the old pods being still up.
func TestBlueGreenAnalysisFailure(t *testing.T) {
	t.Run("pre-promotion", func(t *testing.T) {
		e := setupBlueGreen(t)
		e.createBlueGreen(func(s *v1alpha1.CanarySpec) {
			withChecks(jobCheck("example.com/smoke:job-fail"))(s)
			s.BlueGreen.PrePromotionAnalysis = []string{"smoke"}
			s.BlueGreen.AutoPromotionSeconds = ptr.To[int32](1)
		})
		e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
		e.waitEndpoints(activeService, stableName)
		if e.switchedTo(canaryName) {
			t.Error("the active Service was switched to the new version")
		}
	})
	t.Run("post-promotion", func(t *testing.T) {
		e := setupBlueGreen(t)
		e.createBlueGreen(func(s *v1alpha1.CanarySpec) {
			withChecks(jobCheck("example.com/smoke:job-fail"))(s)
			s.BlueGreen.PostPromotionAnalysis = []string{"smoke"}
			s.BlueGreen.AutoPromotionSeconds = ptr.To[int32](1)
		})
		c := e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
		if c.Status.Abort.Step != v1alpha1.BlueGreenSwitchStep(&c.Spec) {
			t.Errorf("abort at step %d, want the switch step", c.Status.Abort.Step)
		}
		e.waitEndpoints(activeService, stableName)
		if !e.switchedTo(canaryName) {
			t.Error("the active Service was never switched to the new version")
		}
		if _, stableSizes := e.watch.check(); !slices.Equal(stableSizes, []int32{replicas}) {
			t.Errorf("stable sizes %v: the old version must stay up through the post-promotion check", stableSizes)
		}
	})
}
