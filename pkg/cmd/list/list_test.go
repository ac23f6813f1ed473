package list

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func init() { now = func() time.Time { return t0 } }

func meta(ns, name string, age time.Duration, lbls map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, Labels: lbls, CreationTimestamp: metav1.NewTime(t0.Add(-age))}
}

func objects() []runtime.Object {
	web := &v1alpha1.TApp{ObjectMeta: meta(cmdtest.Namespace, "web", 48*time.Hour, map[string]string{"team": "games", "app": "web"})}
	web.Spec.Replicas = ptr.To[int32](5)
	web.Spec.Statuses = map[string]v1alpha1.InstanceDesiredStatus{"3": v1alpha1.InstanceKilled}
	web.Status = v1alpha1.TAppStatus{ObservedGeneration: 1, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: 4,
		Conditions: []metav1.Condition{{Type: "Progressing", Status: "True", Reason: "RolloutComplete", ObservedGeneration: 1}}}
	batch := &v1alpha1.TApp{ObjectMeta: meta(cmdtest.Namespace, "batch", 5*time.Minute, nil)}
	batch.Spec.Replicas = ptr.To[int32](3)
	orders := &v1alpha1.UnitedDeployment{ObjectMeta: meta(cmdtest.Namespace, "orders", 24*time.Hour, map[string]string{"team": "payments"})}
	orders.Spec.Replicas = ptr.To[int32](6)
	orders.Status = v1alpha1.UnitedDeploymentStatus{ObservedGeneration: 1, Replicas: 6, ReadyReplicas: 6, UpdatedReplicas: 2, UpdatedReadyReplicas: 2,
		UpdatedRevision: "orders-7c9b4",
		SubsetStatuses:  []v1alpha1.SubsetStatus{{Name: "zone-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2}, {Name: "zone-b", Replicas: 4, ReadyReplicas: 4, Partition: 4}}}
	checkout := &v1alpha1.Canary{ObjectMeta: meta(cmdtest.Namespace, "checkout", 2*time.Hour, map[string]string{"team": "payments"})}
	checkout.Spec.Replicas = 10
	checkout.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryPaused, CurrentBatch: 1, Message: "waiting for promote",
		CanaryReplicas: 1, CanaryAvailable: 1, StableReplicas: 9, StableAvailable: 9,
		Batches: []v1alpha1.CanaryBatchStatus{{Index: 1, CanaryReplicas: 1, State: "Paused"}, {Index: 2, CanaryReplicas: 10, State: "Pending"}}}
	other := &v1alpha1.Canary{ObjectMeta: meta("shop", "cart", 30*24*time.Hour, nil)}
	other.Spec.Replicas = 2
	other.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryCompleted, CanaryReplicas: 2, CanaryAvailable: 2}
	return []runtime.Object{web, batch, orders, checkout, other}
}

// withTemplates are the workloads and the analysis templates, one of them in another namespace:
// `list` shows the namespace's AnalysisTemplates and every ClusterAnalysisTemplate after the
// workloads.
func withTemplates() []runtime.Object {
	objs := append(objects(), cmdtest.AnalysisTemplates(cmdtest.Namespace, t0.Add(-time.Hour))...)
	other := cmdtest.AnalysisTemplates("shop", t0.Add(-3*time.Hour))[1]
	return append(objs, other)
}

// withoutCanaries serves no Canary resource, as a cluster with an older CRD set.
func withoutCanaries(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	f.(*cmdtest.Factory).FakeDynamicClient.PrependReactor("list", "canaries", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(v1alpha1.Resource("canaries"), "")
	})
	return NewCmdList(f, streams)
}

func withNothing(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	f.(*cmdtest.Factory).FakeDynamicClient.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(v1alpha1.Resource(a.GetResource().Resource), "")
	})
	return NewCmdList(f, streams)
}

func TestList(t *testing.T) {
	tests := []struct {
		name   string
		newCmd cmdtest.NewCmd
		objs   []runtime.Object
		args   []string
	}{
		{"namespace", NewCmdList, objects(), nil},
		{"all-namespaces", NewCmdList, objects(), []string{"-A"}},
		{"wide", NewCmdList, objects(), []string{"-o", "wide"}},
		{"selector", NewCmdList, objects(), []string{"-l", "team=payments"}},
		{"selector-app", NewCmdList, objects(), []string{"-l", "app=web"}},
		{"name", NewCmdList, objects(), []string{"-A", "-o", "name"}},
		{"json", NewCmdList, objects()[2:3], []string{"-o", "json"}},
		{"empty", NewCmdList, nil, nil},
		{"empty-all-namespaces", NewCmdList, nil, []string{"--all-namespaces"}},
		{"crd-missing-warns", withoutCanaries, objects(), nil},
		{"templates", NewCmdList, withTemplates(), nil},
		{"templates-all-namespaces", NewCmdList, withTemplates(), []string{"-A"}},
		{"templates-selector", NewCmdList, withTemplates(), []string{"-l", "team=payments"}},
		{"templates-only", NewCmdList, cmdtest.AnalysisTemplates(cmdtest.Namespace, t0.Add(-time.Hour)), nil},
		{"templates-name", NewCmdList, withTemplates(), []string{"-o", "name"}},
		// A UnitedDeployment over member clusters adds CLUSTERS (reachable/clusters); "-" for the rest.
		{"fleet", NewCmdList, append(objects(), cmdtest.FleetUnitedDeployment(t0, true), cmdtest.FleetCanary(t0)), nil},
		{"error-not-installed", withNothing, nil, nil},
		{"error-arguments", NewCmdList, nil, []string{"tapp/web"}},
		{"error-output", NewCmdList, nil, []string{"-o", "table"}},
		{"error-selector", NewCmdList, objects(), []string{"-l", "team=(payments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, tt.newCmd, tt.objs, tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}
