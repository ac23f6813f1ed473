package pluginverbs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// barrier holds the first n Gets of a client until all n have been made, so that n commands
// all read the object before any of them writes: the race a precondition exists for, made
// certain. Later Gets (a command reading again) pass through.
type barrier struct {
	dynamic.Interface
	wg *gate
}

type gate struct {
	sync.WaitGroup
	left atomic.Int32
}

func (b barrier) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return barrierNamespaceable{b.Interface.Resource(r), b.wg}
}

type barrierNamespaceable struct {
	dynamic.NamespaceableResourceInterface
	wg *gate
}

func (b barrierNamespaceable) Namespace(ns string) dynamic.ResourceInterface {
	return barrierResource{b.NamespaceableResourceInterface.Namespace(ns), b.wg}
}

type barrierResource struct {
	dynamic.ResourceInterface
	wg *gate
}

func (b barrierResource) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	obj, err := b.ResourceInterface.Get(ctx, name, opts, sub...)
	if b.wg.left.Add(-1) >= 0 {
		b.wg.Done()
		b.wg.Wait()
	}
	return obj, err
}

// Two promotes of the same paused batch, both reading it before either writes, advance the
// release by exactly one batch: the API server refuses the second patch's test of
// spec.approvedBatch, and the second command says the batch was approved meanwhile. Then the
// release completes, promote has nothing to do, and abort hands everything back to stable.
func TestCanaryPromoteRaceAndAbort(t *testing.T) {
	e := setup(t)
	stableLabels := map[string]string{"app": "checkout", "track": "stable"}
	stable := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	stable.Spec.Replicas = ptr.To[int32](4)
	stable.Spec.Selector = &metav1.LabelSelector{MatchLabels: stableLabels}
	stable.Spec.Template = podTemplate(stableLabels, "nginx:1.26")
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("4 available stable pods", func() (bool, string) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 4, fmt.Sprintf("%+v", d.Status)
	})
	e.startAgent("canary")
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	c.Spec.Replicas = 4
	c.Spec.StableRef.Name = "checkout"
	c.Spec.Canary.Name = "checkout-canary"
	c.Spec.Canary.Template = podTemplate(map[string]string{"app": "checkout", "track": "canary"}, "nginx:1.27")
	c.Spec.Batches = ptr.To[int32](3)
	c.Spec.PauseType = v1alpha1.PauseAll
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase := func(want v1alpha1.CanaryPhase, batch int32) func() (bool, string) {
		return func() (bool, string) {
			got, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, "checkout", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := got.Status
			return s.ObservedGeneration == got.Generation && s.Phase == want && (batch == 0 || s.CurrentBatch == batch),
				fmt.Sprintf("phase %s batch %d message %q", s.Phase, s.CurrentBatch, s.Message)
		}
	}
	e.Eventually("paused after batch 1", phase(v1alpha1.CanaryPaused, 1))
	e.fails("canary/checkout: --subset and --all apply to a ud", workload.Canary, "checkout", "promote", "canary/checkout", "--all")

	g := &gate{}
	g.Add(2)
	g.left.Store(2)
	client := barrier{e.Dyn, g}
	outs := make([]*strings.Builder, 2)
	errs := make([]error, 2)
	var done sync.WaitGroup
	for i := range outs {
		done.Add(1)
		go func() {
			defer done.Done()
			outs[i] = &strings.Builder{}
			o := &promote.Options{Target: mutate.Target{Ref: workload.Ref{Kind: workload.Canary, Name: "checkout"}, Namespace: e.NS, Client: client},
				IOStreams: genericiooptions.IOStreams{Out: outs[i], ErrOut: outs[i]}}
			errs[i] = o.Run(e.Ctx)
		}()
	}
	done.Wait()
	got := outs[0].String() + outs[1].String()
	t.Logf("two concurrent promotes printed:\n%s", got)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("concurrent promotes failed: %v, %v", errs[0], errs[1])
	}
	if !strings.Contains(got, "canary/checkout promoted: batch 1 of 3 approved") || !strings.Contains(got, "canary/checkout: batch 1 was approved meanwhile by someone else") {
		t.Fatalf("want one promote to approve batch 1 and the other to say it was approved meanwhile; got:\n%s", got)
	}
	if a := e.get(workload.Canary, "checkout").Object["spec"].(map[string]interface{})["approvedBatch"]; a != int64(1) {
		t.Fatalf("spec.approvedBatch = %v after two promotes of batch 1, want 1", a)
	}
	e.Eventually("paused after batch 2", phase(v1alpha1.CanaryPaused, 2))

	e.ok("canary/checkout fully promoted: all 3 batches approved", "promote", "canary/checkout", "--full")
	e.Eventually("completed", phase(v1alpha1.CanaryCompleted, 3))
	e.ok("canary/checkout has completed all 3 batches: nothing to promote", "promote", "canary/checkout")

	e.ok("canary/checkout aborted: rolling back to the stable Deployment checkout", "abort", "canary/checkout")
	e.Eventually("rolled back", phase(v1alpha1.CanaryRolledBack, 0))
	e.ok("canary/checkout is already rolled back", "abort", "canary/checkout")
	e.fails("canary/checkout is rolling back", workload.Canary, "checkout", "promote", "canary/checkout")
	d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "checkout", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 4 {
		t.Fatalf("stable Deployment after the rollback: %v %v", d.Spec.Replicas, err)
	}
}
