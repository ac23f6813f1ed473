package notifications

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// Another controller (field manager "autoscaler") keeps the stable Deployment at its replicas
// while the release shrinks it: the agent stops writing it (Degraded DeploymentContested) and
// on-contested is delivered once.
func TestContestedRelease(t *testing.T) {
	e := e2eenv.Setup(t)
	rc := newReceiver(t)
	configure(e, rc)
	subscribe(e, "on-contested.hook=")
	startAgent(e)
	release(e, "web", "nginx:1.27", 0, nil, nil, v1alpha1.CanaryStep{Replicas: intOrPercent(1), Pause: &v1alpha1.CanaryPause{}})

	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas == replicas {
			return
		}
		_, _ = e.Kube.AppsV1().Deployments(e.NS).Patch(ctx, "web", types.MergePatchType,
			[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "autoscaler"})
	}, 100*time.Millisecond)

	waitCanary(e, "web", "contested, and on-contested recorded", func(cn *v1alpha1.Canary) bool {
		return sent(cn, notify.OnContested, "hook")
	})
	want := map[string]int{notify.OnContested: 1}
	if got := rc.accepted(t); !reflect.DeepEqual(got, want) {
		t.Errorf("the webhook accepted %v, want %v", got, want)
	}
	for _, r := range rc.requests() {
		if text, _ := r.Body["text"].(string); !containsAll(text, "autoscaler", "contested") {
			t.Errorf("on-contested text %q does not name the other field manager", text)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
