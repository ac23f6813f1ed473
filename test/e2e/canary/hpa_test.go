package canary

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/externalmetrics"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// The HorizontalPodAutoscalers here are kube-controller-manager's, scaling on the external
// metric queueMetric that the test serves (test/externalmetrics) and sets: with a target
// average value of 1, the HPA wants as many replicas as the metric's value.
const queueMetric = "queue_depth"

var (
	adapterOnce sync.Once
	adapter     *externalmetrics.Adapter
	adapterErr  error
)

// metricsAdapter is the package's external metrics adapter, started and registered once.
func metricsAdapter(t *testing.T) *externalmetrics.Adapter {
	t.Helper()
	c := localcluster.Shared(t)
	adapterOnce.Do(func() {
		adapter, adapterErr = externalmetrics.Start(context.Background(), c.RESTConfig(), c.FrontProxyCAData)
	})
	if adapterErr != nil {
		t.Fatal(adapterErr)
	}
	return adapter
}

// createHPA makes a HorizontalPodAutoscaler of target on queueMetric, between 1 and 20
// replicas, whose scale-down is not held back (no stabilization window), as a service that
// wants its replicas to follow its queue at once would set it.
func createHPA(e *e2eenv.Env, target autoscalingv2.CrossVersionObjectReference) {
	e.T.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: target.Name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: target,
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    20,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: queueMetric},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(1, resource.DecimalSI)},
				},
			}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
	e2eenv.Create(e.T, e.Ctx, e.Kube.AutoscalingV2().HorizontalPodAutoscalers(e.NS), hpa)
}

// scaleTo has the HPA want n replicas and waits until it has scaled its target hpa to n and the
// agent has observed it (observed): the watcher expects n before the metric changes, so that
// no reaction can be seen before it knows, and holds the release to n once the agent has it.
func (e *env) scaleTo(w *invariant.Moving, n int32, hpa string, observed func(c *v1alpha1.Canary) bool) {
	e.T.Helper()
	w.Expect(n)
	metricsAdapter(e.T).Set(e.NS, queueMetric, int64(n))
	waitHPA(e.Env, hpa, n)
	e.waitCanary("the agent to observe a total of "+itoa(n), func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool { return observed(c) })
	w.Follow(n)
}

// specObserved is scaleTo's observed for an HPA on the Canary: the agent has synced the
// spec.replicas the HPA set.
func specObserved(n int32) func(c *v1alpha1.Canary) bool {
	return func(c *v1alpha1.Canary) bool {
		return c.Spec.Replicas == n && c.Status.ObservedGeneration == c.Generation
	}
}

// waitHPA waits until the HPA has scaled its target to n.
func waitHPA(e *e2eenv.Env, hpa string, n int32) {
	e.T.Helper()
	e.Eventually("the HorizontalPodAutoscaler to scale to "+itoa(n), func() (bool, string) {
		h, err := e.Kube.AutoscalingV2().HorizontalPodAutoscalers(e.NS).Get(e.Ctx, hpa, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return h.Status.DesiredReplicas == n, describeHPA(h)
	})
}

func itoa(n int32) string { return resource.NewQuantity(int64(n), resource.DecimalSI).String() }

func describeHPA(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var b strings.Builder
	b.WriteString("HPA current " + itoa(h.Status.CurrentReplicas) + " desired " + itoa(h.Status.DesiredReplicas))
	for _, c := range h.Status.Conditions {
		b.WriteString("\n  " + string(c.Type) + "=" + string(c.Status) + " (" + c.Reason + "): " + c.Message)
	}
	return b.String()
}

// failOnViolation fails the test, and ends its waits, the moment the watcher sees a violation.
func failOnViolation(e *e2eenv.Env, w *invariant.Moving) {
	w.OnViolation(func(v string) {
		e.T.Errorf("invariant: %s", v)
		e.Cancel()
	})
}

// checkFollowed fails the test on any violation of the moving watcher and on any contest or
// refusal the Canary reported.
func checkFollowed(e *e2eenv.Env, w *invariant.Moving) {
	e.T.Helper()
	w.Stop()
	if n := w.Count(); n > 0 {
		e.T.Errorf("%d invariant violations (the first ones above)", n)
	}
	if w.Events() < 10 {
		e.T.Errorf("the invariant watcher saw only %d pod states", w.Events())
	}
	e.T.Logf("invariant watcher: %d pod states, worst %s", w.Events(), w.Worst())
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Canary,involvedObject.name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Reason, "Contested") || strings.Contains(ev.Reason, "Autoscaled") || ev.Reason == v1alpha1.ReasonInvalidSpec {
			e.T.Errorf("Event %s: %s", ev.Reason, ev.Message)
		}
	}
}

// The pair form under a real HPA pointed at the Canary (its scale subresource): 10 replicas
// released in steps of 25% and 50%; the HPA raises the total to 14 while step 1 waits for
// promotion and lowers it to 6 while step 2 waits. Each time the Canary serves the new total
// (the step's share of it on the canary), and the release completes with the HPA's 6, all on
// the canary Deployment, with never fewer pods available than the total (as it moves) nor more
// than total + maxSurge (3), and no contest.
func TestHPAScalesAPairMidRelease(t *testing.T) {
	e := &env{Env: e2eenv.Setup(t)}
	metricsAdapter(t).Set(e.NS, queueMetric, replicas)
	e2eenv.Create(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableDeployment())
	e.waitDeployments("the stable Deployment to have 10 available pods", func(stable, _ *appsv1.Deployment) bool {
		return stable != nil && stable.Status.AvailableReplicas == replicas
	})
	w := invariant.ReleaseFollowing(e.Ctx, e.Kube, e.NS, "app=checkout", replicas, 3, 0)
	failOnViolation(e.Env, w)
	e.startAgent()
	e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) { s.MaxSurge = ptr.To(intstr.FromInt32(3)) },
		step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("50%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("100%"), nil))
	createHPA(e.Env, autoscalingv2.CrossVersionObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Canary", Name: name})

	served := func(step, total int32) *v1alpha1.Canary {
		return e.waitCanary("step "+itoa(step)+" to serve a total of "+itoa(total), func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
			return waitingBatch(c) == step && c.Spec.Replicas == total && c.Status.Replicas == total &&
				stable != nil && canary != nil && stable.Status.AvailableReplicas+canary.Status.AvailableReplicas >= total &&
				c.Status.CanaryReplicas > 0 && c.Status.StableReplicas > 0
		})
	}
	served(1, replicas)
	e.scaleTo(w, 14, name, specObserved(14))
	c := served(1, 14)
	if c.Status.CanaryReplicas != 4 || c.Status.StableReplicas != 10 {
		t.Errorf("step 1 (25%%) of 14 with %d canary and %d stable pods, want 4 (3.5 rounded half up) and 10", c.Status.CanaryReplicas, c.Status.StableReplicas)
	}
	e.promote(c)
	served(2, 14)
	e.scaleTo(w, 6, name, specObserved(6))
	c = served(2, 6)
	if c.Status.CanaryReplicas != 3 || c.Status.StableReplicas != 3 {
		t.Errorf("step 2 (50%%) of 6 with %d canary and %d stable pods, want 3 and 3", c.Status.CanaryReplicas, c.Status.StableReplicas)
	}
	e.promote(c)
	e.waitCanary("the release to complete with the HPA's 6", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Replicas == 6 &&
			stable != nil && ptr.Deref(stable.Spec.Replicas, 1) == 0 && stable.Status.Replicas == 0 &&
			canary != nil && canary.Status.AvailableReplicas == 6
	})
	checkFollowed(e.Env, w)
}

// The targetRef form under a real HPA pointed at the StatefulSet target, whose Canary leaves
// spec.replicas out: 4 replicas released in steps of 25% and 50%; the HPA raises the StatefulSet
// to 8 while step 1 waits and lowers it to 3 while step 2 waits. The partition follows each
// total, exactly the step's ordinals run the new revision (6 and 7 of 8, then 1 and 2 of 3), and the release completes with the HPA's 3, all on the new revision, with never more
// than one pod unavailable below the total as it moves (the StatefulSet's maxUnavailable: an
// in-place update replaces a pod), no pod above it, and no contest.
func TestHPAScalesAStatefulSetTargetMidRelease(t *testing.T) {
	e := setupTarget(t, false)
	metricsAdapter(t).Set(e.NS, queueMetric, stsReplicas)
	w := invariant.ReleaseFollowing(e.Ctx, e.Kube, e.NS, "app="+stsName, stsReplicas, 0, 1)
	failOnViolation(e.Env, w)
	e.createTargetedCanary(name, "StatefulSet", stsName, 0, nil,
		step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("50%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("100%"), nil))
	e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	createHPA(e.Env, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: stsName})

	e.setImage("example.com/ledger:v2")
	waiting := func(step, total, partition int32) *v1alpha1.Canary {
		e.waitStatefulSet("step "+itoa(step)+" of "+itoa(total), func(s *appsv1.StatefulSet) bool {
			return ptr.Deref(s.Spec.Replicas, 1) == total && partitionOf(s) == partition && s.Status.ReadyReplicas == total
		})
		return e.waitCanary("step "+itoa(step)+" of "+itoa(total)+" to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
			return waitingBatch(c) == step && c.Status.Replicas == total && c.Status.Target != nil && c.Status.Target.Partition == partition
		})
	}
	waiting(1, stsReplicas, 3)
	e.scaleTo(w, 8, stsName, func(c *v1alpha1.Canary) bool { return c.Status.Replicas == 8 })
	c := waiting(1, 8, 6)
	exactly := func(total, partition int32) {
		t.Helper()
		e.waitStatefulSet("exactly the step's pods on the update revision", func(s *appsv1.StatefulSet) bool {
			return s.Status.ReadyReplicas == total && s.Status.UpdatedReplicas == total-partition && s.Status.CurrentReplicas == partition
		})
		if got, want := e.podImages(), ordinalImages(stsName, int(total), int(partition), "example.com/ledger:v1", "example.com/ledger:v2"); got != want {
			t.Errorf("step of %d pods at partition %d: pods %s, want %s", total, partition, got, want)
		}
	}
	exactly(8, 6) // the step's share of the current total, never more
	e.promote(c)
	waiting(2, 8, 4)
	e.scaleTo(w, 3, stsName, func(c *v1alpha1.Canary) bool { return c.Status.Replicas == 3 })
	c = waiting(2, 3, 1) // 50% of 3, rounded up
	exactly(3, 1)
	e.promote(c)
	c = e.waitCanary("the release to complete with the HPA's 3", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.Replicas == 3
	})
	e.waitStatefulSet("held at 3", func(s *appsv1.StatefulSet) bool {
		return partitionOf(s) == 3 && ptr.Deref(s.Spec.Replicas, 1) == 3 && s.Status.ReadyReplicas == 3
	})
	if got := e.images(); got["example.com/ledger:v2"] != 3 || len(got) != 1 {
		t.Errorf("after the release: images %v, want 3 on v2", got)
	}
	if c.Spec.Replicas != 0 {
		t.Errorf("spec.replicas %d, want it left out", c.Spec.Replicas)
	}
	checkFollowed(e.Env, w)
}

// The targetRef form of a Deployment under a real HPA pointed at the Canary (an HPA on the
// Deployment is refused: the release scales it): between releases the HPA raises the total from
// 4 to 6 and the held Deployment follows; a release (steps of 25% and 50%, maxSurge 1) then
// sees the total raised to 8 while step 1 waits and lowered to 3 while step 2 waits, and
// completes with the HPA's 3 pods on the Deployment, all on the new template, the temporary
// canary Deployment gone, under the moving-total invariant and with no contest.
func TestHPAScalesADeploymentTargetMidRelease(t *testing.T) {
	e := &env{Env: e2eenv.Setup(t)}
	metricsAdapter(t).Set(e.NS, queueMetric, 4)
	e.createCheckout(4)
	w := invariant.ReleaseFollowing(e.Ctx, e.Kube, e.NS, "app=checkout", 4, 1, 0)
	failOnViolation(e.Env, w)
	e.startAgent()
	e2eenv.Create(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CanarySpec{
			Replicas:  4,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: stableName},
			MaxSurge:  ptr.To(intstr.FromInt32(1)),
			Steps: []v1alpha1.CanaryStep{
				step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
				step(intstr.FromString("50%"), &v1alpha1.CanaryPause{}),
				step(intstr.FromString("100%"), nil),
			},
		},
	})
	e.waitProgressing(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	createHPA(e.Env, autoscalingv2.CrossVersionObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Canary", Name: name})

	e.scaleTo(w, 6, name, specObserved(6))
	e.waitDeployments("the held Deployment to follow the Canary to 6", func(d, _ *appsv1.Deployment) bool {
		return d != nil && d.Spec.Paused && ptr.Deref(d.Spec.Replicas, 1) == 6 && d.Status.AvailableReplicas == 6
	})
	e2eenv.Update(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableName, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "example.com/shelf:v2"
	})
	served := func(step, total, canaryPods int32) *v1alpha1.Canary {
		return e.waitCanary("step "+itoa(step)+" to serve a total of "+itoa(total), func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
			return waitingBatch(c) == step && c.Spec.Replicas == total && c.Status.Replicas == total &&
				d != nil && tmp != nil && d.Status.AvailableReplicas+tmp.Status.AvailableReplicas >= total &&
				c.Status.CanaryReplicas == canaryPods
		})
	}
	served(1, 6, 2) // 25% of 6: 1.5 rounds half up
	e.scaleTo(w, 8, name, specObserved(8))
	e.promote(served(1, 8, 2))
	served(2, 8, 4)
	e.scaleTo(w, 3, name, specObserved(3))
	e.promote(served(2, 3, 2)) // 50% of 3: 1.5 rounds half up
	e.waitCanary("the release to complete with the HPA's 3", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Replicas == 3 && tmp == nil &&
			d != nil && ptr.Deref(d.Spec.Replicas, 1) == 3 && d.Status.AvailableReplicas == 3 && d.Status.UpdatedReplicas == 3
	})
	checkFollowed(e.Env, w)
}
