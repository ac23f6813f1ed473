package canary

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
)

// scaledGames is TApp games scaled to 8 instances mid-release at partition 6 (step 1 of 25%
// after the scale-up), with one pod per spec: "old" (ready, the stable template), "new" (ready,
// spec.template), either with "!" (not ready), or "-" (no pod). Its status counts them.
func scaledGames(specs ...string) (*v1alpha1.TApp, []*corev1.Pod) {
	a := games(6, 0, "v1", "v2")
	a.Spec.Replicas = ptr.To[int32](8)
	a.Status.Replicas, a.Status.ReadyReplicas, a.Status.AvailableReplicas = 0, 0, 0
	newHash := tapp.TemplateHash(&a.Spec.Template)
	var pods []*corev1.Pod
	for id, spec := range specs {
		if spec == "-" {
			continue
		}
		which, unready := strings.CutSuffix(spec, "!")
		hash, ready := "old-hash", corev1.ConditionTrue
		if which == "new" {
			hash = newHash
			a.Status.UpdatedReplicas++
		}
		if unready {
			ready = corev1.ConditionFalse
		} else {
			a.Status.ReadyReplicas++
		}
		a.Status.Replicas++
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("games-%d", id), UID: types.UID(fmt.Sprintf("pod-%d", id)),
				Labels:          map[string]string{v1alpha1.LabelTAppName: "games", v1alpha1.LabelInstanceID: strconv.Itoa(id), v1alpha1.LabelTemplateHash: hash},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(a, v1alpha1.SchemeGroupVersion.WithKind(kindTApp))}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		})
	}
	return a, pods
}

// After a scale-up mid-release, the TApp's pods below the partition on spec.template go, as a
// StatefulSet's: not ready ones at once, then ready ones one at a time, the highest id first,
// while every other instance is there and ready and none at or above the partition is left to
// update; never a pod of the stable template.
func TestTAppDeletionsAfterAScaleUp(t *testing.T) {
	for name, tc := range map[string]struct {
		pods []string
		want string
	}{
		"ready ones one at a time":   {[]string{"old", "old", "old", "new", "new", "new", "new", "new"}, "games-5"},
		"not ready first and free":   {[]string{"old", "old", "old", "new", "new!", "new", "new", "new"}, "games-4"},
		"a missing pod holds ready":  {[]string{"old", "old", "old", "new", "new", "old", "new", "-"}, ""},
		"another pod not ready":      {[]string{"old", "old!", "old", "new", "old", "old", "new", "new"}, ""},
		"its own update holds ready": {[]string{"old", "old", "old", "new", "new", "new", "old", "new"}, ""},
		"nothing below partition 6":  {[]string{"old", "old", "old", "old", "old", "old", "new", "new"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			a, pods := scaledGames(tc.pods...)
			if got := names(tappDeletions(a, pods, 6)); got != tc.want {
				t.Errorf("deletions %q, want %q", got, tc.want)
			}
		})
	}
}

// The plan's execute lists the TApp's pods and deletes the one below the partition on
// spec.template, with a UID precondition; a TApp whose status counts no more instances on
// spec.template than the partition leaves is not listed.
func TestTAppScaledUpMidReleaseActions(t *testing.T) {
	a, pods := scaledGames("old", "old", "old", "old", "new!", "old", "new", "new")
	kube := k8sfake.NewClientset(podObjects(pods)...)
	c := &Controller{kubeClient: kube}
	c.Base = base.New(ControllerName, Kind, record.NewFakeRecorder(10))
	cn := tappCanary()
	target := tappTarget{a}
	r := &inPlacePlan{decision: &decision{obs: &observed{target: target, canary: cn}, canary: cn}, target: target, stableRev: "v1"}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	if got := actions(kube); got != "list pods\ndelete pods games-4" {
		t.Errorf("actions:\n%s\nwant a list and the deletion of games-4", got)
	}
	if d := kube.Actions()[1].(interface{ GetDeleteOptions() metav1.DeleteOptions }).GetDeleteOptions(); d.Preconditions == nil || *d.Preconditions.UID != pods[4].UID {
		t.Errorf("delete options %+v, want the pod's UID as a precondition", d)
	}

	kube.ClearActions()
	settled, _ := scaledGames("old", "old", "old", "old", "old", "old", "new", "new")
	r.target = tappTarget{settled}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	if got := actions(kube); got != "" {
		t.Errorf("settled: actions %s, want none", got)
	}
}
