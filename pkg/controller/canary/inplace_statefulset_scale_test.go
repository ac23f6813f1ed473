package canary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// ledgerPods are the pods of StatefulSet s, one per spec "<revision>" (ready) or "<revision>!"
// (not ready), at ordinals 0, 1, ...; a spec "-" is an ordinal with no pod. s's status counts
// them.
func ledgerPods(s *appsv1.StatefulSet, specs ...string) []*corev1.Pod {
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}}
	s.Status.ReadyReplicas, s.Status.AvailableReplicas, s.Status.UpdatedReplicas = 0, 0, 0
	var pods []*corev1.Pod
	for i, spec := range specs {
		if spec == "-" {
			continue
		}
		rev, unready := strings.CutSuffix(spec, "!")
		ready := corev1.ConditionTrue
		if unready {
			ready = corev1.ConditionFalse
		} else {
			s.Status.ReadyReplicas++
			s.Status.AvailableReplicas++
		}
		if rev == s.Status.UpdateRevision {
			s.Status.UpdatedReplicas++
		}
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ledger-%d", i), UID: types.UID(fmt.Sprintf("pod-%d", i)),
				Labels:          map[string]string{"app": "ledger", appsv1.ControllerRevisionHashLabelKey: rev},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1.SchemeGroupVersion.WithKind(kindStatefulSet))}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		})
	}
	return pods
}

// After a scale-up mid-release, the pods below the partition on the update revision go: those
// not ready at once, then ready ones one at a time, the highest ordinal first, while every other
// pod is there and ready; none at or above the partition, none of the stable revision.
func TestStatefulSetDeletionsAfterAScaleUp(t *testing.T) {
	for name, tc := range map[string]struct {
		pods []string
		want string
	}{
		"ready ones one at a time":   {[]string{"v1", "v1", "v1", "v2", "v2", "v2", "v2", "v2"}, "ledger-5"},
		"not ready first and free":   {[]string{"v1", "v1", "v1", "v2", "v2!", "v2", "v2", "v2"}, "ledger-4"},
		"a missing pod holds ready":  {[]string{"v1", "v1", "v1", "v2", "v2", "v1", "v2", "-"}, ""},
		"another pod not ready":      {[]string{"v1", "v1!", "v1", "v2", "v1", "v1", "v2", "v2"}, ""},
		"its own update holds ready": {[]string{"v1", "v1", "v1", "v2", "v2", "v2", "v1", "v2"}, ""},
		"nothing below partition 6":  {[]string{"v1", "v1", "v1", "v1", "v1", "v1", "v2", "v2"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			s := scaled(ledger(6, 0, "v1", "v2"), 8)
			if got := names(statefulSetDeletions(s, ledgerPods(s, tc.pods...), 6)); got != tc.want {
				t.Errorf("deletions %q, want %q", got, tc.want)
			}
		})
	}
}

// The plan's execute lists the StatefulSet's pods and deletes the one below the partition on
// the update revision, with a UID precondition; a StatefulSet whose status
// counts no more pods on the update revision than the partition leaves is not listed.
func TestStatefulSetScaledUpMidReleaseActions(t *testing.T) {
	s := scaled(ledger(6, 0, "v1", "v2"), 8)
	pods := ledgerPods(s, "v1", "v1", "v1", "v1", "v2!", "v1", "v2", "v2")
	kube := k8sfake.NewClientset(podObjects(pods)...)
	c := &Controller{kubeClient: kube}
	rec := record.NewFakeRecorder(10)
	c.Base = base.New(ControllerName, Kind, rec)
	cn := targetCanary()
	target := statefulSetTarget{s}
	r := &inPlacePlan{decision: &decision{obs: &observed{target: target, canary: cn}, canary: cn}, target: target, stableRev: "v1"}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	if got := actions(kube); got != "list pods\ndelete pods ledger-4" {
		t.Errorf("actions:\n%s\nwant a list and the deletion of ledger-4", got)
	}
	if d := kube.Actions()[1].(interface{ GetDeleteOptions() metav1.DeleteOptions }).GetDeleteOptions(); d.Preconditions == nil || *d.Preconditions.UID != pods[4].UID {
		t.Errorf("delete options %+v, want the pod's UID as a precondition", d)
	}

	// Its pods as the step wants them: nothing listed.
	kube.ClearActions()
	settled := scaled(ledger(6, 0, "v1", "v2"), 8)
	ledgerPods(settled, "v1", "v1", "v1", "v1", "v1", "v1", "v2", "v2")
	r.target = statefulSetTarget{settled}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	if got := actions(kube); got != "" {
		t.Errorf("settled: actions %s, want none", got)
	}
}
