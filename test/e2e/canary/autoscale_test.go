package canary

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The Canary's scale subresource, as an autoscaler uses it: kubectl scale canary/checkout raises
// the total from 10 to 14 while batch 1 waits for promotion; the release completes with 14
// canary pods and none of the stable Deployment, the capacity and surge watchers never see
// fewer than 10 available pods nor more than 14 + maxSurge, and nothing is a contest. The scale
// subresource reads status.replicas and status.selector back.
func TestScaleTheCanaryMidRelease(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseFirst, 1)
	c := e.waitCanary("batch 1 to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1
	})
	e.limit.Store(2 * 14) // maxSurge 100% of the new total
	kubectl(t, e.Env, "scale", "canary/"+name, "--replicas=14")
	c = e.waitCanary("the total of 14 to be served at batch 1", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Spec.Replicas == 14 && c.Status.Replicas == 14 &&
			stable.Status.AvailableReplicas+canary.Status.AvailableReplicas >= 14
	})
	scale := kubectl(t, e.Env, "get", "canary/"+name, "--subresource=scale", "-o", "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}")
	if scale != "14 14 app=checkout,track=stable" {
		t.Errorf("scale subresource %q, want spec 14, status 14 and the stable Deployment's selector", scale)
	}
	e.promote(c)
	c = e.waitCanary("the release to complete with 14 canary pods", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && stable.Status.Replicas == 0 && canary.Status.AvailableReplicas == 14
	})
	var sizes []int32
	for _, b := range c.Status.Batches {
		sizes = append(sizes, b.CanaryReplicas)
	}
	if len(sizes) != 4 || sizes[3] != 14 {
		t.Errorf("batches of %v pods, want 4 batches ending at 14", sizes)
	}
	canarySizes, stableSizes := e.watch.check()
	if canarySizes[len(canarySizes)-1] != 14 || stableSizes[len(stableSizes)-1] != 0 {
		t.Errorf("canary sizes %v stable sizes %v", canarySizes, stableSizes)
	}
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Canary,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Reason, "Contested") {
			t.Errorf("Event %s: %s", ev.Reason, ev.Message)
		}
	}
}

// A StatefulSet target followed by a Canary without spec.replicas, scaled as its autoscaler
// would (the StatefulSet's scale subresource) from 4 to 8 while step 1 (25%) waits for
// promotion: the partition follows to 6 (2 of 8) and exactly ordinals 6 and 7 run the new
// revision (the agent deletes the pods below the partition on it), and after the promote the
// release completes with every one of the 8 on it and the StatefulSet held at 8; the Canary's
// spec.replicas is never written.
func TestStatefulSetTargetFollowsItsReplicas(t *testing.T) {
	e := setupTarget(t, false)
	e.createTargetedCanary(name, "StatefulSet", stsName, 0, nil,
		step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("100%"), nil))
	e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.waitStatefulSet("held at 4", func(s *appsv1.StatefulSet) bool { return partitionOf(s) == stsReplicas })

	e.setImage("example.com/ledger:v2")
	c := e.waitCanary("step 1 (1 of 4) to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1
	})
	if s := e.statefulSet(); partitionOf(s) != 3 {
		t.Fatalf("step 1 of 4 at partition %d, want 3", partitionOf(s))
	}
	sts := e.Kube.AppsV1().StatefulSets(e.NS)
	scale, err := sts.GetScale(e.Ctx, stsName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 8
	if _, err := sts.UpdateScale(e.Ctx, stsName, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The StatefulSet makes ordinals 4 to 7 on the update revision before the agent raises the
	// partition to 6; the agent then deletes the pods below it on the update revision (3, the
	// step's pod of 4, and whichever of 4 and 5 were made before the partition moved), and the
	// StatefulSet makes them again on the stable one: the step's share of the new total, 2 of 8,
	// never more (docs/canary-targets.md, "A StatefulSet or TApp scaled mid-release").
	e.waitStatefulSet("step 1 of 8: partition 6, 8 ready pods, 2 on the update revision", func(s *appsv1.StatefulSet) bool {
		return partitionOf(s) == 6 && s.Status.ReadyReplicas == 8 && s.Status.UpdatedReplicas == 2 && s.Status.CurrentReplicas == 6
	})
	if got, want := e.podImages(), ordinalImages(stsName, 8, 6, "example.com/ledger:v1", "example.com/ledger:v2"); got != want {
		t.Errorf("at step 1 of 8: pods %s, want %s", got, want)
	}
	c = e.waitCanary("step 1 of 8 to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Status.Replicas == 8 && c.Status.Target != nil && c.Status.Target.Partition == 6
	})
	if c.Status.CanaryReplicas != 2 || c.Status.StableReplicas != 6 {
		t.Errorf("step 1 of 8 with %d canary and %d stable pods, want 2 and 6", c.Status.CanaryReplicas, c.Status.StableReplicas)
	}
	e.promote(c)
	c = e.waitCanary("the release to complete with 8 pods", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.Replicas == 8
	})
	e.waitStatefulSet("held at 8", func(s *appsv1.StatefulSet) bool { return partitionOf(s) == 8 })
	if got := e.images(); got["example.com/ledger:v2"] != 8 {
		t.Errorf("after the release: images %v, want 8 on v2", got)
	}
	if c.Spec.Replicas != 0 {
		t.Errorf("spec.replicas %d, want it left out", c.Spec.Replicas)
	}
	noContest(e.Env)
}
