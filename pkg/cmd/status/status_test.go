package status

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func meta(name string, generation int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, Generation: generation}
}

func cond(typ, status, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
}

// tapp is a 5-instance TApp at generation 2 with the given status.
func tapp(mutate func(*v1alpha1.TApp)) *v1alpha1.TApp {
	t := &v1alpha1.TApp{ObjectMeta: meta("web", 2)}
	t.Spec.Replicas = ptr.To[int32](5)
	t.Status = v1alpha1.TAppStatus{
		ObservedGeneration: 2, Replicas: 5, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: 3,
		AppStatus: v1alpha1.AppRunning,
		Statuses: map[string]v1alpha1.InstanceStatus{
			"0": "Running", "1": "Running", "2": "Running", "3": "Updating", "4": "Pending",
		},
		Conditions: []metav1.Condition{cond("Progressing", "True", "RolloutInProgress", "3 of 5 instances updated", 2)},
	}
	if mutate != nil {
		mutate(t)
	}
	return t
}

func tappComplete(t *v1alpha1.TApp) {
	t.Status.ReadyReplicas, t.Status.AvailableReplicas, t.Status.UpdatedReplicas = 5, 5, 5
	for id := range t.Status.Statuses {
		t.Status.Statuses[id] = "Running"
	}
	t.Status.Conditions = []metav1.Condition{cond("Progressing", "True", "RolloutComplete", "all 5 instances are up to date and available", 2)}
}

func ud(mutate func(*v1alpha1.UnitedDeployment)) *v1alpha1.UnitedDeployment {
	u := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders", 4)}
	u.Spec.Replicas = ptr.To[int32](6)
	u.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 2, "zone-c": 2}}
	u.Status = v1alpha1.UnitedDeploymentStatus{
		ObservedGeneration: 4, Replicas: 6, ReadyReplicas: 6, UpdatedReplicas: 2, UpdatedReadyReplicas: 2,
		CurrentRevision: "orders-5d8f7", UpdatedRevision: "orders-7c9b4",
		SubsetStatuses: []v1alpha1.SubsetStatus{
			{Name: "zone-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2},
			{Name: "zone-b", Replicas: 2, ReadyReplicas: 2, Partition: 2},
			{Name: "zone-c", Replicas: 2, ReadyReplicas: 2, Partition: 2},
		},
	}
	if mutate != nil {
		mutate(u)
	}
	return u
}

func canary(mutate func(*v1alpha1.Canary)) *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: meta("checkout", 3)}
	c.Spec.Replicas = 10
	c.Spec.Batches = ptr.To[int32](4)
	c.Status = v1alpha1.CanaryStatus{
		ObservedGeneration: 3, Phase: v1alpha1.CanaryPaused, CurrentBatch: 1,
		Message:        "batch 1 is ready; waiting for promote",
		CanaryReplicas: 1, CanaryAvailable: 1, StableReplicas: 9, StableAvailable: 9,
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchPaused},
			{Index: 2, CanaryReplicas: 4, State: v1alpha1.BatchPending},
			{Index: 3, CanaryReplicas: 7, State: v1alpha1.BatchPending},
			{Index: 4, CanaryReplicas: 10, State: v1alpha1.BatchPending},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// t0 is the time workload.Now says in these tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func init() { workload.Now = func() time.Time { return t0 } }

// stepsCanary is a Canary of spec.steps at step 2 of 3, baking: 1m20s of its timed pause left
// (workload.Now is fixed at t0), its check measuring.
func stepsCanary(mutate func(*v1alpha1.Canary)) *v1alpha1.Canary {
	return canary(func(c *v1alpha1.Canary) {
		c.Spec.Batches = nil
		c.Spec.Steps = []v1alpha1.CanaryStep{
			{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{}},
			{Replicas: intstr.FromString("50%"), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 5 * time.Minute}}, Analysis: []string{"error-rate"}},
		}
		end := metav1.NewTime(t0.Add(80 * time.Second))
		c.Spec.ApprovedBatch = 1
		c.Status.Phase, c.Status.CurrentBatch = v1alpha1.CanaryProgressing, 2
		c.Status.Message = "step 2/3: 5 of 5 canary pods available, baking"
		c.Status.CanaryReplicas, c.Status.CanaryAvailable, c.Status.StableReplicas, c.Status.StableAvailable = 5, 5, 5, 5
		c.Status.Batches = []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchCompleted},
			{Index: 2, CanaryReplicas: 5, State: v1alpha1.BatchBaking, PauseEndTime: &end},
			{Index: 3, CanaryReplicas: 10, State: v1alpha1.BatchPending},
		}
		c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{{Name: "error-rate", Phase: v1alpha1.AnalysisRunning, Count: 2, Successful: 2,
			Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "[0.012]"}, {Phase: v1alpha1.AnalysisSuccessful, Value: "[0.009]"}}}}
		if mutate != nil {
			mutate(c)
		}
	})
}

// blueGreenCanary is a blue-green Canary of 10 replicas at step k of 3: 1, its preview waiting
// for a promote with its pre-promotion check passed; 3, switched, 25s of its scale-down delay
// left (workload.Now is fixed at t0).
func blueGreenCanary(k int32, mutate func(*v1alpha1.Canary)) *v1alpha1.Canary {
	return canary(func(c *v1alpha1.Canary) {
		c.Spec.Batches = nil
		c.Spec.StableRef.Name, c.Spec.Canary.Name = "checkout", "checkout-canary"
		c.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "checkout", PreviewService: "checkout-preview",
			PrePromotionAnalysis: []string{"smoke"}}
		c.Status.CurrentBatch = k
		c.Status.CanaryReplicas, c.Status.CanaryAvailable, c.Status.StableReplicas, c.Status.StableAvailable = 10, 10, 10, 10
		c.Status.BlueGreen = &v1alpha1.CanaryBlueGreenStatus{Active: "checkout", Preview: "checkout-canary"}
		c.Status.Batches = []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 10, State: v1alpha1.BatchPaused},
			{Index: 2, CanaryReplicas: 10, State: v1alpha1.BatchPending},
			{Index: 3, CanaryReplicas: 10, State: v1alpha1.BatchPending},
		}
		c.Status.Phase, c.Status.Message = v1alpha1.CanaryPaused, "step 1 (preview) complete with 10 canary pods: waiting for promotion (kubectl workload promote)"
		c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{{Name: "smoke", Phase: v1alpha1.AnalysisSuccessful, Count: 1, Successful: 1,
			Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "job smoke succeeded"}}}}
		if k == 3 {
			end := metav1.NewTime(t0.Add(25 * time.Second))
			c.Spec.ApprovedBatch = 1
			c.Status.Phase, c.Status.Message = v1alpha1.CanaryProgressing, "step 3 (scale-down): 10 of 10 canary pods available, baking: pause until 2026-03-01T12:00:25Z"
			c.Status.BlueGreen.Active, c.Status.BlueGreen.ScaleDownTime = "checkout-canary", &end
			c.Status.Analysis = nil
			c.Status.Batches[0].State, c.Status.Batches[1].State = v1alpha1.BatchCompleted, v1alpha1.BatchCompleted
			c.Status.Batches[2].State, c.Status.Batches[2].PauseEndTime = v1alpha1.BatchBaking, &end
		}
		if mutate != nil {
			mutate(c)
		}
	})
}

// canaryAt is the Canary at a step of its release.
func canaryAt(batch int32, phase v1alpha1.CanaryPhase, canaryAvailable int32, msg string) *v1alpha1.Canary {
	return canary(func(c *v1alpha1.Canary) {
		sizes := []int32{1, 4, 7, 10}
		c.Status.Phase, c.Status.CurrentBatch, c.Status.Message = phase, batch, msg
		c.Status.CanaryReplicas, c.Status.CanaryAvailable = sizes[batch-1], canaryAvailable
		c.Status.StableReplicas = 10 - canaryAvailable
		c.Status.StableAvailable = 10 - canaryAvailable
		for i := range c.Status.Batches {
			b := &c.Status.Batches[i]
			switch {
			case b.Index < batch || (b.Index == batch && phase == v1alpha1.CanaryCompleted):
				b.State = v1alpha1.BatchCompleted
			case b.Index == batch && phase == v1alpha1.CanaryPaused:
				b.State = v1alpha1.BatchPaused
			case b.Index == batch:
				b.State = v1alpha1.BatchUpgrading
			default:
				b.State = v1alpha1.BatchPending
			}
		}
	})
}

func deploy(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: meta("front", 7)}
	d.Spec.Replicas = ptr.To[int32](4)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 7, Replicas: 5, UpdatedReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 4}
	if mutate != nil {
		mutate(d)
	}
	return d
}

func sts(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: meta("db", 5)}
	s.Spec.Replicas = ptr.To[int32](3)
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 5, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 1,
		CurrentRevision: "db-6b5d", UpdateRevision: "db-84f1"}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// ds is a DaemonSet on 3 nodes at generation 4, rolling its pods: 1 updated, 2 available.
func ds(mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	d := &appsv1.DaemonSet{ObjectMeta: meta("agents", 4)}
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}
	d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 4, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
		NumberReady: 2, NumberAvailable: 2, UpdatedNumberScheduled: 1}
	if mutate != nil {
		mutate(d)
	}
	return d
}

// dsDone has every pod of the DaemonSet updated and available.
func dsDone(d *appsv1.DaemonSet) {
	d.Status.NumberReady, d.Status.NumberAvailable, d.Status.UpdatedNumberScheduled = 3, 3, 3
}

// dsOnDelete has the DaemonSet use OnDelete with 1 of its 3 available pods updated.
func dsOnDelete(d *appsv1.DaemonSet) {
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	d.Status.NumberReady, d.Status.NumberAvailable = 3, 3
}

// dsHeld is dsOnDelete as a Canary holds it, with 2 pods kept on the stable revision.
func dsHeld(d *appsv1.DaemonSet) {
	dsOnDelete(d)
	d.Annotations = map[string]string{v1alpha1.AnnotationDaemonSetPartition: "2"}
}

func TestStatusOnce(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		args []string
	}{
		{"tapp-progressing", tapp(nil), []string{"tapp/web"}},
		{"tapp-type-name-form", tapp(nil), []string{"tapp", "web"}},
		{"tapp-full-resource-name", tapp(nil), []string{"tapps.apps.workload.dev/web"}},
		{"tapp-from-file", tapp(nil), []string{"-f", "testdata/tapp.yaml"}},
		{"error-file-without-workload", tapp(nil), []string{"-f", "testdata/service.yaml"}},
		{"tapp-complete", tapp(tappComplete), []string{"tapp/web"}},
		{"tapp-stale", tapp(func(t *v1alpha1.TApp) { tappComplete(t); t.Generation = 3 }), []string{"tapp/web"}},
		{"tapp-never-observed", tapp(func(t *v1alpha1.TApp) { t.Status = v1alpha1.TAppStatus{} }), []string{"tapp/web"}},
		{"tapp-paused", tapp(func(t *v1alpha1.TApp) { t.Spec.UpdateStrategy.Paused = true }), []string{"tapp/web"}},
		{"tapp-held-by-partition", tapp(func(t *v1alpha1.TApp) {
			tappComplete(t)
			t.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
			t.Status.UpdatedReplicas = 3
		}), []string{"tapp/web"}},
		{"tapp-held-by-partition-success-on-pause", tapp(func(t *v1alpha1.TApp) {
			tappComplete(t)
			t.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
			t.Status.UpdatedReplicas = 3
		}), []string{"tapp/web", "--success-on-pause"}},
		{"tapp-killed-instance", tapp(func(t *v1alpha1.TApp) {
			tappComplete(t)
			t.Spec.Statuses = map[string]v1alpha1.InstanceDesiredStatus{"3": v1alpha1.InstanceKilled}
			t.Status.Statuses["3"] = v1alpha1.InstanceKilledNow
			t.Status.Replicas, t.Status.ReadyReplicas, t.Status.AvailableReplicas, t.Status.UpdatedReplicas = 4, 4, 4, 4
		}), []string{"tapp/web"}},
		{"tapp-selector-mismatch", tapp(func(t *v1alpha1.TApp) {
			t.Status.Conditions = append(t.Status.Conditions, cond("ReplicaFailure", "True", "SelectorMismatch", "selector does not match the labels of template canary", 2))
		}), []string{"tapp/web"}},
		{"tapp-failed-create-keeps-progressing", tapp(func(t *v1alpha1.TApp) {
			t.Status.Conditions = append(t.Status.Conditions, cond("ReplicaFailure", "True", "FailedCreate", "pods \"web-4\" is forbidden: exceeded quota", 2))
		}), []string{"tapp/web"}},
		{"ud-held-by-partitions", ud(nil), []string{"ud/orders"}},
		{"ud-held-by-partitions-success-on-pause", ud(nil), []string{"ud/orders", "--success-on-pause"}},
		{"ud-progressing", ud(func(u *v1alpha1.UnitedDeployment) {
			u.Status.SubsetStatuses[1].Partition = 0
			u.Status.SubsetStatuses[1].UpdatedReplicas = 1
			u.Status.SubsetStatuses[1].ReadyReplicas = 1
			u.Status.UpdatedReplicas, u.Status.ReadyReplicas = 3, 5
		}), []string{"uniteddeployment/orders"}},
		{"ud-complete", ud(func(u *v1alpha1.UnitedDeployment) {
			u.Spec.UpdateStrategy.ManualUpdate = nil
			u.Status.UpdatedReplicas, u.Status.UpdatedReadyReplicas, u.Status.CurrentRevision = 6, 6, "orders-7c9b4"
			for i := range u.Status.SubsetStatuses {
				u.Status.SubsetStatuses[i].UpdatedReplicas, u.Status.SubsetStatuses[i].Partition = 2, 0
			}
		}), []string{"ud/orders"}},
		{"ud-subset-failure", ud(func(u *v1alpha1.UnitedDeployment) {
			u.Status.Conditions = []metav1.Condition{cond(v1alpha1.SubsetFailure, "True", "InvalidAllocation", "subset replicas add up to 8, more than spec.replicas 6", 4)}
		}), []string{"ud/orders"}},
		{"canary-paused", canary(nil), []string{"canary/checkout"}},
		{"canary-progressing", canaryAt(2, v1alpha1.CanaryProgressing, 2, ""), []string{"canary/checkout"}},
		{"canary-completed", canaryAt(4, v1alpha1.CanaryCompleted, 10, ""), []string{"canary/checkout"}},
		{"canary-rolled-back", canaryAt(2, v1alpha1.CanaryRolledBack, 0, "rolled back on request"), []string{"canary/checkout"}},
		{"canary-degraded", canaryAt(2, v1alpha1.CanaryDegraded, 1, "canary pods crash: CrashLoopBackOff"), []string{"canary/checkout"}},
		{"canary-steps-baking", stepsCanary(nil), []string{"canary/checkout"}},
		{"canary-steps-aborted", stepsCanary(abortedRelease), []string{"canary/checkout"}},
		{"canary-steps-template-checks", stepsCanary(fromTemplate), []string{"canary/checkout"}},
		{"canary-bluegreen-preview", blueGreenCanary(1, nil), []string{"canary/checkout"}},
		{"canary-bluegreen-switched", blueGreenCanary(3, nil), []string{"canary/checkout"}},
		{"canary-bluegreen-route-switched", blueGreenCanary(3, func(c *v1alpha1.Canary) {
			c.Spec.BlueGreen.ActiveService, c.Spec.BlueGreen.PreviewService = "checkout-stable", "checkout-new"
			c.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
				HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-new"}}
		}), []string{"canary/checkout"}},
		{"canary-bluegreen-target-route-held", blueGreenCanary(3, func(c *v1alpha1.Canary) {
			c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
			c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "checkout"}
			c.Spec.BlueGreen.ActiveService, c.Spec.BlueGreen.PreviewService = "checkout-stable", "checkout-new"
			c.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
				HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-new"}}
			c.Status.Phase, c.Status.Message = v1alpha1.CanaryCompleted,
				`all 3 steps complete: Deployment "checkout" runs the new template, 10 of 10 pods available; held paused until the next template change`
			for i := range c.Status.Batches {
				c.Status.Batches[i].State, c.Status.Batches[i].PauseEndTime = v1alpha1.BatchCompleted, nil
			}
			c.Status.CanaryReplicas, c.Status.CanaryAvailable = 0, 0
			c.Status.BlueGreen = &v1alpha1.CanaryBlueGreenStatus{Active: "checkout"}
		}), []string{"canary/checkout"}},
		{"canary-bluegreen-target-switched", blueGreenCanary(3, func(c *v1alpha1.Canary) {
			c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
			c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "checkout"}
		}), []string{"canary/checkout"}},
		{"deploy-progressing", deploy(nil), []string{"deploy/front"}},
		{"deploy-deadline-exceeded", deploy(func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "False", Reason: "ProgressDeadlineExceeded"}}
		}), []string{"deploy/front"}},
		{"sts-held-by-partition", sts(nil), []string{"sts/db"}},
		{"canary-target-releasing", canary(func(c *v1alpha1.Canary) {
			c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
			c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: "db"}
			c.Spec.Replicas = 3
			c.Status.Phase, c.Status.Message = v1alpha1.CanaryProgressing, "batch 2/3: 1 of 2 canary pods available, stable at 1"
			c.Status.Target = &v1alpha1.CanaryTargetStatus{StableRevision: "db-6b5d", UpdateRevision: "db-84f1", Partition: 1, UpdatedReplicas: 2, AvailableReplicas: 2}
		}), []string{"canary/checkout"}},
		{"canary-tapp-target-releasing", canary(func(c *v1alpha1.Canary) {
			c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
			c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "web"}
			c.Spec.Replicas = 5
			c.Status.Phase, c.Status.Message = v1alpha1.CanaryProgressing, "batch 1/4: 1 of 1 canary pods available, stable at 4"
			c.Status.Target = &v1alpha1.CanaryTargetStatus{StableRevision: "web-6b5d", UpdateRevision: "web-84f1", Partition: 4, UpdatedReplicas: 1, AvailableReplicas: 5}
		}), []string{"canary/checkout"}},
		{"ds-progressing", ds(nil), []string{"ds/agents"}},
		{"ds-complete", ds(dsDone), []string{"daemonsets.apps/agents"}},
		{"ds-stale", ds(func(d *appsv1.DaemonSet) { d.Generation = 5 }), []string{"ds/agents"}},
		{"ds-updated-not-available", ds(func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled = 3 }), []string{"ds/agents"}},
		{"ds-on-delete", ds(dsOnDelete), []string{"ds/agents"}},
		{"ds-on-delete-complete", ds(func(d *appsv1.DaemonSet) { dsOnDelete(d); dsDone(d) }), []string{"ds/agents"}},
		{"canary-target-daemonset", canary(func(c *v1alpha1.Canary) {
			c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
			c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
			c.Spec.Replicas = 6
			c.Status.Phase, c.Status.Message = v1alpha1.CanaryProgressing, "step 2/3: 2 of 3 canary pods available"
			c.Status.Target = &v1alpha1.CanaryTargetStatus{StableRevision: "agents-6b5d", UpdateRevision: "agents-84f1", Partition: 3, UpdatedReplicas: 2, AvailableReplicas: 5}
		}), []string{"canary/checkout"}},
		{"error-missing", tapp(nil), []string{"tapp/nope"}},
		{"error-unknown-type", tapp(nil), []string{"pod/web"}},
		{"error-no-args", tapp(nil), nil},
		{"error-extra-args", tapp(nil), []string{"tapp/web", "extra"}},
		{"error-timeout-without-watch", tapp(nil), []string{"tapp/web", "--timeout=1m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdStatus, []runtime.Object{tt.obj}, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}

// abortedRelease is stepsCanary rolled back by its failed check, with the long messages of a
// real abort.
func abortedRelease(c *v1alpha1.Canary) {
	c.Status.Phase, c.Status.Message = v1alpha1.CanaryRolledBack, "rolled back: stable \"checkout\" serves 10 pods, the canary none"
	c.Status.CanaryReplicas, c.Status.CanaryAvailable, c.Status.StableReplicas, c.Status.StableAvailable = 0, 0, 10, 10
	c.Status.Analysis[0].Phase, c.Status.Analysis[0].Failed, c.Status.Analysis[0].Count = v1alpha1.AnalysisFailed, 1, 3
	c.Status.Analysis[0].Message = "1 failed measurement, more than failureLimit 0: [0.31]"
	c.Status.Analysis[0].Measurements = append(c.Status.Analysis[0].Measurements, v1alpha1.AnalysisMeasurement{Phase: v1alpha1.AnalysisFailed, Value: "[0.31]"})
	c.Status.Abort = &v1alpha1.CanaryAbort{Reason: v1alpha1.ReasonAnalysisFailed, Step: 2, Check: "error-rate",
		Message: "check error-rate failed at step 2/3: 1 failed measurement, more than failureLimit 0: [0.31]"}
}

// On a terminal of 80 or 120 columns (COLUMNS), the summary line keeps within the width: what
// does not fit goes on the lines below it, aligned under the summary; no text is lost.
func TestStatusFitsTheTerminal(t *testing.T) {
	for _, tt := range []struct {
		name  string
		width int
		obj   runtime.Object
	}{
		{"canary-steps-aborted-80", 80, stepsCanary(abortedRelease)},
		{"canary-steps-aborted-120", 120, stepsCanary(abortedRelease)},
		{"canary-steps-baking-80", 80, stepsCanary(nil)},
		{"canary-steps-baking-120", 120, stepsCanary(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.RunWidth(t, tt.width, NewCmdStatus, []runtime.Object{tt.obj}, "canary/checkout")
			cmdtest.Golden(t, tt.name, transcript(res))
			for _, l := range strings.Split(strings.TrimSuffix(res.Out, "\n"), "\n") {
				if n := utf8.RuneCountInString(l); n > tt.width {
					t.Errorf("%d columns, wider than %d: %s", n, tt.width, l)
				}
			}
			whole := cmdtest.Run(t, NewCmdStatus, []runtime.Object{tt.obj}, "canary/checkout")
			if strings.Join(strings.Fields(res.Out), " ") != strings.Join(strings.Fields(whole.Out), " ") {
				t.Errorf("the text differs from the uncut one:\n%s\nwant the words of\n%s", res.Out, whole.Out)
			}
		})
	}
}

// toUnstructured turns a typed object into what the dynamic client serves.
func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	gvks, _, err := cmdtest.Scheme().ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

// watchStep is what one watch connection delivers before it ends (closed) or stays open.
type watchStep struct {
	events []watch.Event
	closed bool
}

// withWatches wraps a verb so that its fake client serves the given watch connections in turn on
// resource; the last one stays open when not closed. When a connection closes, the fake cluster
// holds the last object it delivered, as a real one would on the relist.
func withWatches(t *testing.T, resource string, steps ...watchStep) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		client := f.(*cmdtest.Factory).FakeDynamicClient
		var mu sync.Mutex
		n := 0
		client.PrependWatchReactor(resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			w := watch.NewRaceFreeFake()
			if n >= len(steps) {
				return true, w, nil // nothing more happens
			}
			step := steps[n]
			n++
			for _, e := range step.events {
				w.Action(e.Type, e.Object)
			}
			if step.closed {
				if len(step.events) > 0 {
					last := step.events[len(step.events)-1].Object.(*unstructured.Unstructured)
					if err := client.Tracker().Update(action.GetResource(), last.DeepCopy(), cmdtest.Namespace); err != nil {
						t.Error(err)
					}
				}
				w.Stop()
			}
			return true, w, nil
		})
		return NewCmdStatus(f, streams)
	}
}

func modified(t *testing.T, objs ...runtime.Object) []watch.Event {
	var events []watch.Event
	for _, o := range objs {
		events = append(events, watch.Event{Type: watch.Modified, Object: toUnstructured(t, o)})
	}
	return events
}

func TestStatusWatch(t *testing.T) {
	release := []runtime.Object{
		canaryAt(1, v1alpha1.CanaryProgressing, 0, "creating the canary Deployment"),
		canaryAt(1, v1alpha1.CanaryPaused, 1, "batch 1 is ready; waiting for promote"),
		canaryAt(1, v1alpha1.CanaryPaused, 1, "batch 1 is ready; waiting for promote"), // no change: no line
		canaryAt(2, v1alpha1.CanaryProgressing, 1, ""),
		canaryAt(2, v1alpha1.CanaryProgressing, 4, ""),
		canaryAt(3, v1alpha1.CanaryProgressing, 7, ""),
		canaryAt(4, v1alpha1.CanaryProgressing, 9, ""),
		canaryAt(4, v1alpha1.CanaryCompleted, 10, ""),
	}
	start := canaryAt(1, v1alpha1.CanaryProgressing, 0, "")
	start.Status.CurrentBatch, start.Status.Phase = 0, ""
	tests := []struct {
		name  string
		start runtime.Object
		steps []watchStep
		args  []string
	}{
		{"watch-canary-release", start, []watchStep{{events: modified(t, release...)}}, []string{"canary/checkout", "-w"}},
		{"watch-canary-success-on-pause", start, []watchStep{{events: modified(t, release...)}}, []string{"canary/checkout", "-w", "--success-on-pause"}},
		// The connection drops after batch 2 starts; the watch is re-established and sees the rest.
		{"watch-reconnects", start, []watchStep{
			{events: modified(t, release[:4]...), closed: true},
			{events: modified(t, release[4:]...)},
		}, []string{"canary/checkout", "--watch"}},
		{"watch-degraded", start, []watchStep{{events: modified(t,
			canaryAt(1, v1alpha1.CanaryProgressing, 0, ""),
			canaryAt(1, v1alpha1.CanaryDegraded, 0, "canary pods crash: CrashLoopBackOff"),
		)}}, []string{"canary/checkout", "-w"}},
		{"watch-deleted", tapp(nil), []watchStep{{events: []watch.Event{
			{Type: watch.Modified, Object: toUnstructured(t, tapp(func(t *v1alpha1.TApp) { t.Status.UpdatedReplicas = 4 }))},
			{Type: watch.Deleted, Object: toUnstructured(t, tapp(nil))},
		}}}, []string{"tapp/web", "-w"}},
		{"watch-timeout", tapp(nil), nil, []string{"tapp/web", "-w", "--timeout=300ms"}},
		{"watch-already-complete", tapp(tappComplete), nil, []string{"tapp/web", "-w"}},
		{"watch-ds-to-complete", ds(nil), []watchStep{{events: modified(t,
			ds(func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled, d.Status.NumberAvailable = 2, 2 }),
			ds(func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled, d.Status.NumberAvailable = 3, 2 }),
			ds(dsDone),
		)}}, []string{"ds/agents", "-w"}},
		{"watch-ud-to-complete", ud(nil), []watchStep{{events: modified(t,
			ud(func(u *v1alpha1.UnitedDeployment) {
				u.Generation, u.Spec.UpdateStrategy.ManualUpdate.Partitions["zone-b"] = 5, 0
			}),
			ud(func(u *v1alpha1.UnitedDeployment) {
				u.Generation, u.Status.ObservedGeneration, u.Spec.UpdateStrategy.ManualUpdate.Partitions["zone-b"] = 5, 5, 0
				u.Status.SubsetStatuses[1].Partition, u.Status.SubsetStatuses[1].UpdatedReplicas, u.Status.UpdatedReplicas = 0, 2, 4
				u.Status.UpdatedReadyReplicas = 4
			}),
			ud(func(u *v1alpha1.UnitedDeployment) {
				u.Generation, u.Status.ObservedGeneration, u.Spec.UpdateStrategy.ManualUpdate = 6, 6, nil
				for i := range u.Status.SubsetStatuses {
					u.Status.SubsetStatuses[i].UpdatedReplicas, u.Status.SubsetStatuses[i].Partition = 2, 0
				}
				u.Status.UpdatedReplicas, u.Status.UpdatedReadyReplicas = 6, 6
			}),
		)}}, []string{"ud/orders", "-w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, withWatches(t, resourceOf(tt.start), tt.steps...), []runtime.Object{tt.start}, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}

func resourceOf(obj runtime.Object) string {
	switch obj.(type) {
	case *v1alpha1.TApp:
		return "tapps"
	case *v1alpha1.UnitedDeployment:
		return "uniteddeployments"
	case *v1alpha1.Canary:
		return "canaries"
	case *appsv1.DaemonSet:
		return "daemonsets"
	}
	return "deployments"
}

// On a terminal, each redraw moves the cursor up over the lines drawn before and erases them,
// so the scrollback never fills; lines are cut to the width and the block to the height.
func TestTerminalRedrawsInPlace(t *testing.T) {
	for _, tt := range []struct {
		name    string
		display Display
	}{
		{"terminal-color", Display{Terminal: true, Width: 72, Height: 24, Color: true}},
		{"terminal-no-color", Display{Terminal: true, Width: 72, Height: 24}},
		{"terminal-small", Display{Terminal: true, Width: 40, Height: 5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := tt.display.NewProgress(&out, "canary/checkout")
			for _, c := range []*v1alpha1.Canary{
				canaryAt(1, v1alpha1.CanaryProgressing, 0, ""),
				canaryAt(1, v1alpha1.CanaryPaused, 1, "waiting for promote"),
				canaryAt(1, v1alpha1.CanaryPaused, 1, "waiting for promote"),
				canaryAt(4, v1alpha1.CanaryCompleted, 10, ""),
			} {
				st, err := canaryStatusOf(t, c)
				if err != nil {
					t.Fatal(err)
				}
				p.Show(st)
			}
			// Make the escape sequences visible in the golden file.
			got := strings.NewReplacer("\x1b", `\e`, "\r", `\r`).Replace(out.String())
			cmdtest.Golden(t, tt.name, got)
			if !tt.display.Color && strings.Contains(out.String(), colorReset) {
				t.Error("colors drawn with Color off")
			}
		})
	}
}

func TestDisplayDetection(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var b strings.Builder
	if d := DetectDisplay(&b, env(nil)); d.Terminal || d.Color {
		t.Errorf("a buffer is not a terminal: %+v", d)
	}
	for _, tt := range []struct {
		terminal bool
		env      map[string]string
		want     Display
	}{
		{false, nil, Display{}},
		{true, nil, Display{Terminal: true, Width: 100, Height: 30, Color: true}},
		{true, map[string]string{"NO_COLOR": "1"}, Display{Terminal: true, Width: 100, Height: 30}},
		{true, map[string]string{"NO_COLOR": ""}, Display{Terminal: true, Width: 100, Height: 30, Color: true}},
		{true, map[string]string{"TERM": "dumb"}, Display{}},
		{true, map[string]string{"COLUMNS": "120"}, Display{Terminal: true, Width: 120, Height: 30, Color: true}},
		{false, map[string]string{"COLUMNS": "80"}, Display{Width: 80}},
		{false, map[string]string{"COLUMNS": "none"}, Display{}},
	} {
		if got := displayFor(tt.terminal, 100, 30, env(tt.env)); got != tt.want {
			t.Errorf("terminal %v, env %v: got %+v, want %+v", tt.terminal, tt.env, got, tt.want)
		}
	}
}

func canaryStatusOf(t *testing.T, c *v1alpha1.Canary) (workload.RolloutStatus, error) {
	return workload.RolloutStatusOf(workload.Canary, toUnstructured(t, c))
}

// A Deployment a Canary releases says which Canary drives it.
func TestStatusOfADeploymentHeldByACanary(t *testing.T) {
	c := canary(func(c *v1alpha1.Canary) { c.Spec.StableRef.Name = "front"; c.Spec.Canary.Name = "front-v2" })
	res := cmdtest.Run(t, NewCmdStatus, []runtime.Object{deploy(nil), c}, "deploy/front")
	cmdtest.Golden(t, "deploy-held-by-canary", transcript(res))
}

// A TApp a Canary releases in place says which Canary drives it.
func TestStatusOfATAppHeldByACanary(t *testing.T) {
	c := canary(func(c *v1alpha1.Canary) {
		c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
		c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "web"}
	})
	res := cmdtest.Run(t, NewCmdStatus, []runtime.Object{tapp(nil), c}, "tapp/web")
	cmdtest.Golden(t, "tapp-held-by-canary", transcript(res))
}

// A DaemonSet a Canary holds says which Canary releases it and where that release stands; its
// own line says how many pods the Canary keeps on the stable revision.
func TestStatusOfADaemonSetHeldByACanary(t *testing.T) {
	c := canary(func(c *v1alpha1.Canary) {
		c.Spec.StableRef, c.Spec.Canary = v1alpha1.StableRef{}, v1alpha1.CanaryTarget{}
		c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
	})
	for _, tt := range []struct {
		name string
		obj  *appsv1.DaemonSet
		args []string
	}{
		{"ds-held-by-canary", ds(dsHeld), []string{"ds/agents"}},
		// 1 pod updated of the 3 - 1 the step asks for: the agent is deleting old pods.
		{"ds-released-by-canary", ds(func(d *appsv1.DaemonSet) {
			dsHeld(d)
			d.Annotations[v1alpha1.AnnotationDaemonSetPartition] = "1"
		}), []string{"ds/agents"}},
		{"ds-held-by-canary-success-on-pause", ds(dsHeld), []string{"ds/agents", "-w", "--success-on-pause"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdStatus, []runtime.Object{tt.obj, c}, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}

// transcript is res.Transcript with the object's read before the list of Canaries: status sends
// the two at once (Options.read), so the order they reach the fake client in is the scheduler's.
func transcript(res cmdtest.Result) string {
	if a := res.Actions; len(a) >= 2 && a[0] == "list canaries" && strings.HasPrefix(a[1], "get ") {
		a[0], a[1] = a[1], a[0]
	}
	return res.Transcript()
}

// fromTemplate makes the step's check an entry of a ClusterAnalysisTemplate with two checks, one
// inline check beside it: each line names the template its check came from, the inline one none.
func fromTemplate(c *v1alpha1.Canary) {
	c.Spec.Analysis = []v1alpha1.AnalysisCheck{
		{Name: "slo", TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: "error-rate"}},
		{Name: "pods", Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}}}}
	c.Spec.Steps[1].Analysis = []string{"slo", "pods"}
	c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{
		{Name: "slo.error-ratio", Template: "ClusterAnalysisTemplate/error-rate", Phase: v1alpha1.AnalysisRunning, Count: 1, Successful: 1,
			Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "[0.009]"}}},
		{Name: "slo.latency-p99", Template: "ClusterAnalysisTemplate/error-rate", Phase: v1alpha1.AnalysisRunning},
		{Name: "pods", Phase: v1alpha1.AnalysisSuccessful, Count: 1, Successful: 1}}
}
