package canary

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// gitopsManifests are the stable Deployment and the Canary as a team keeps them in Git: the
// Deployment without spec.replicas, which the release sets (docs/canary.md, "GitOps": what
// Argo CD's ignoreDifferences with RespectIgnoreDifferences, or a manifest that leaves it out,
// applies), the Canary without what the agent and the plugin write (status, approvedBatch,
// the finalizer and the stable snapshot annotation).
const gitopsManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
spec:
  selector:
    matchLabels: {app: checkout, track: stable}
  template:
    metadata:
      labels: {app: checkout, track: stable}
    spec:
      containers:
      - name: checkout
        image: nginx:1.26
---
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata:
  name: checkout
spec:
  replicas: 10
  stableRef: {name: checkout}
  canary:
    name: checkout-canary
    template:
      metadata:
        labels: {app: checkout, track: canary}
      spec:
        containers:
        - name: checkout
          image: nginx:1.27
  batches: 4
  pauseType: First
  minReadySeconds: 1
  maxSurge: 100%
`

// A GitOps controller re-applies the user's manifests every 2 s through a whole release, by
// server-side apply with its own field manager or by client-side apply (kubectl apply): the
// release completes with the same steps and Events as without it, the promote is not lost, and
// nothing is counted as a contest.
func TestGitOpsReapplyThroughARelease(t *testing.T) {
	apply := map[string][]string{
		"none":        nil,
		"server-side": {"apply", "--server-side", "--field-manager=gitops", "--force-conflicts"},
		"client-side": {"apply"},
	}
	reasons := map[string][]string{}
	for _, mode := range []string{"none", "server-side", "client-side"} {
		t.Run(mode, func(t *testing.T) {
			reasons[mode] = releaseReapplied(t, apply[mode])
		})
	}
	for _, mode := range []string{"server-side", "client-side"} {
		if got, want := reasons[mode], reasons["none"]; !slices.Equal(got, want) {
			t.Errorf("re-applied %s: Events %v; without re-applying %v", mode, got, want)
		}
	}
}

// releaseReapplied runs the release of gitopsManifests, re-applying them with kubectl args
// every 2 s from before the Canary exists to its end (nil: never), and returns the reasons of
// the Canary's Events, sorted, each once.
func releaseReapplied(t *testing.T, args []string) []string {
	e := setup(t)
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(file, []byte(gitopsManifests), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) error {
		cmd := exec.CommandContext(e.Ctx, pluginexec.Kubectl(t), append(append([]string{"-n", e.NS}, args...), "-f", file)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	e.limit.Store(replicas * 2) // maxSurge 100%
	if args == nil {
		if err := kubectl("create"); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
			t.Fatal(err)
		}
	} else {
		if err := kubectl(args...); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var applies int
		var applyErr error
		wg.Go(func() {
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-e.Ctx.Done():
					return
				case <-tick.C:
					if err := kubectl(args...); err != nil && applyErr == nil {
						applyErr = err
					}
					applies++
				}
			}
		})
		defer func() {
			close(stop)
			wg.Wait()
			if applyErr != nil {
				t.Errorf("a re-apply failed: %v", applyErr)
			}
			if applies < 2 {
				t.Errorf("only %d re-applies during the release", applies)
			}
		}()
	}

	c := e.waitCanary("batch 1 to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1
	})
	time.Sleep(5 * time.Second) // two re-applies at the pause: the promote must survive them
	e.promote(e.canary())
	c = e.waitCanary("the release to complete", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && stable.Status.Replicas == 0 && canary.Status.AvailableReplicas == replicas
	})
	checkCompleted(t, c)
	if c.Spec.ApprovedBatch != 1 || c.Spec.Retries != 0 {
		t.Errorf("approvedBatch %d retries %d after the release, want 1 and 0", c.Spec.ApprovedBatch, c.Spec.Retries)
	}
	canarySizes, stableSizes := e.watch.check()
	if !slices.Equal(canarySizes, plan) || !nonIncreasing(stableSizes) {
		t.Errorf("canary sizes %v stable sizes %v; want canary %v and the stable ones never growing", canarySizes, stableSizes, plan)
	}
	var states []string
	for _, b := range c.Status.Batches {
		states = append(states, fmt.Sprintf("%d:%d:%s", b.Index, b.CanaryReplicas, b.State))
	}
	if got := strings.Join(states, " "); got != "1:1:Completed 2:4:Completed 3:7:Completed 4:10:Completed" {
		t.Errorf("batches %s", got)
	}
	// The agent records Events asynchronously: the status can say Completed before the
	// ReleaseCompleted Event is stored, so wait for it before comparing the sets.
	var events *corev1.EventList
	if err := wait.PollUntilContextTimeout(e.Ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		events, err = e.Kube.CoreV1().Events(e.NS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Canary,involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool { return ev.Reason == v1alpha1.EventReleaseComplete }), nil
	}); err != nil {
		t.Fatalf("no %s Event after the release completed: %v", v1alpha1.EventReleaseComplete, err)
	}
	var reasons []string
	for _, ev := range events.Items {
		if strings.Contains(ev.Reason, "Contested") || ev.Type != "Normal" {
			t.Errorf("Event %s %s: %s", ev.Type, ev.Reason, ev.Message)
		}
		if !slices.Contains(reasons, ev.Reason) {
			reasons = append(reasons, ev.Reason)
		}
	}
	slices.Sort(reasons)
	return reasons
}
