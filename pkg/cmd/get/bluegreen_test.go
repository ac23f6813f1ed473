package get

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// blueGreenObjects is examples/canary-bluegreen.yaml's release of shop (3 replicas) with its
// two Deployments at full size: at step 1, the preview waiting for promote once its
// pre-promotion check passed; at step 3, switched, 25s of the scale-down delay left.
func blueGreenObjects(k int32) []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: meta("shop", "uid-canary-shop", time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 3
	c.Spec.StableRef.Name, c.Spec.Canary.Name = "shop", "shop-v2"
	c.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "shop", PreviewService: "shop-preview",
		PrePromotionAnalysis: []string{"smoke"}, ScaleDownDelaySeconds: ptr.To[int32](30)}
	start := func(ago time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(t0.Add(-ago))) }
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryPaused, CurrentBatch: 1,
		Message:        "step 1 (preview) complete with 3 canary pods: waiting for promotion (kubectl workload promote)",
		CanaryReplicas: 3, CanaryAvailable: 3, StableReplicas: 3, StableAvailable: 3,
		BlueGreen: &v1alpha1.CanaryBlueGreenStatus{Active: "shop", Preview: "shop-v2"},
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 3, State: v1alpha1.BatchPaused, StartTime: start(10 * time.Minute)},
			{Index: 2, CanaryReplicas: 3, State: v1alpha1.BatchPending},
			{Index: 3, CanaryReplicas: 3, State: v1alpha1.BatchPending}},
		Analysis: []v1alpha1.AnalysisCheckStatus{{Name: "smoke", Phase: v1alpha1.AnalysisSuccessful, Count: 1, Successful: 1,
			Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "job smoke succeeded"}}}}}
	if k == 3 {
		end := metav1.NewTime(t0.Add(25 * time.Second))
		c.Spec.ApprovedBatch = 1
		st := &c.Status
		st.Phase, st.CurrentBatch, st.Analysis = v1alpha1.CanaryProgressing, 3, nil
		st.Message = "step 3/3: 3 of 3 canary pods available, baking: pause until 2026-03-01T12:00:25Z"
		st.BlueGreen = &v1alpha1.CanaryBlueGreenStatus{Active: "shop-v2", Preview: "shop-v2", ScaleDownTime: &end}
		st.Batches[0].State = v1alpha1.BatchCompleted
		st.Batches[1].State, st.Batches[1].StartTime = v1alpha1.BatchCompleted, start(5*time.Second)
		st.Batches[2].State, st.Batches[2].StartTime, st.Batches[2].PauseEndTime = v1alpha1.BatchBaking, start(5*time.Second), &end
	}
	objs := []runtime.Object{c}
	objs = append(objs, deployment("shop", 3, labels("app", "shop", "track", "blue"), nil,
		[]rev{{"6f9c", []string{"shop-6f9c-abcde", "shop-6f9c-fghij", "shop-6f9c-klmno"}}})...)
	objs = append(objs, deployment("shop-v2", 3, labels("app", "shop", "track", "green"), labels(v1alpha1.LabelCanaryName, "shop"),
		[]rev{{"5b7d", []string{"shop-v2-5b7d-abcde", "shop-v2-5b7d-fghij", "shop-v2-5b7d-klmno"}}})...)
	setImages(objs, "shop", "shop-v2", "nginx:1.26", "2", "nginx:1.27", "1")
	return objs
}

// blueGreenTargetObjects is examples/canary-bluegreen-deployment-target.yaml's release of cart
// switched to the temporary Deployment cart-canary, the paused Deployment cart still whole
// during the scale-down delay.
func blueGreenTargetObjects() []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: meta("cart", "uid-canary-cart", time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 2
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "cart"}
	c.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "cart", PreviewService: "cart-preview", ScaleDownDelaySeconds: ptr.To[int32](60)}
	c.Spec.ApprovedBatch = 1
	end := metav1.NewTime(t0.Add(40 * time.Second))
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryProgressing, CurrentBatch: 3,
		Message:        "step 3/3: 2 of 2 canary pods available, baking: pause until 2026-03-01T12:00:40Z",
		CanaryReplicas: 2, CanaryAvailable: 2, StableReplicas: 2, StableAvailable: 2,
		Target:    &v1alpha1.CanaryTargetStatus{StableRevision: "5c8e1f20", UpdateRevision: "a71b03d4", UpdatedReplicas: 2, AvailableReplicas: 4},
		BlueGreen: &v1alpha1.CanaryBlueGreenStatus{Active: "cart-canary", Preview: "cart-canary", ScaleDownTime: &end},
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 2, State: v1alpha1.BatchCompleted},
			{Index: 2, CanaryReplicas: 2, State: v1alpha1.BatchCompleted},
			{Index: 3, CanaryReplicas: 2, State: v1alpha1.BatchBaking, PauseEndTime: &end}}}
	objs := []runtime.Object{c}
	objs = append(objs, deployment("cart", 2, labels("app", "cart"), nil, []rev{{"6f9c", []string{"cart-6f9c-abcde", "cart-6f9c-fghij"}}})...)
	objs = append(objs, deployment("cart-canary", 2, labels("app", "cart", v1alpha1.LabelCanaryName, "cart"), labels(v1alpha1.LabelCanaryName, "cart"),
		[]rev{{"5b7d", []string{"cart-canary-5b7d-abcde", "cart-canary-5b7d-fghij"}}})...)
	setImages(objs, "cart", "cart-canary", "nginx:1.26", "3", "nginx:1.27", "1")
	return objs
}

// The tree of a blue-green Canary names its steps (preview, switch, scale-down), the current
// step's check, which side each Service selects, and the scale-down countdown.
func TestGetBlueGreen(t *testing.T) {
	for _, tt := range []struct {
		name string
		objs []runtime.Object
		ref  string
	}{
		{"canary-bluegreen-preview-tree", blueGreenObjects(1), "canary/shop"},
		{"canary-bluegreen-switched-tree", blueGreenObjects(3), "canary/shop"},
		{"canary-bluegreen-target-switched-tree", blueGreenTargetObjects(), "canary/cart"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdGet, tt.objs, tt.ref)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}
