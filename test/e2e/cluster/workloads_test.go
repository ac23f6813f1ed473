package cluster

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestDeploymentOf100ReachesReady(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", 100), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitDeploymentReady(t, ctx, cs, ns, "web", 100)

	known := map[string]bool{}
	for _, n := range localcluster.Shared(t).Nodes {
		known[n.Name] = true
	}
	for _, p := range pods {
		if !known[p.Spec.NodeName] {
			t.Errorf("pod %s is on %q, not on a fake node", p.Name, p.Spec.NodeName)
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s: phase %s, pod IP %q; want Running with an IP", p.Name, p.Status.Phase, p.Status.PodIP)
		}
	}
}

// TestStatefulSetStartsInOrder checks the OrderedReady guarantee through the
// order of watch events, which follows the order of writes in etcd: pod i
// must be created only after pod i-1 was seen Ready.
func TestStatefulSetStartsInOrder(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	const n = 5
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            new(int32(n)),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels("db")},
			Template:            podTemplate("db", "registry.invalid/db:v1"),
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var created []string // pod names in creation order
	ready := map[string]bool{}
	for len(ready) < n {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatalf("watch: %v; created %v, ready %v", ctx.Err(), created, ready)
		}
		if !ok {
			t.Fatalf("watch closed early; created %v, ready %v", created, ready)
		}
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod {
			t.Fatalf("unexpected watch event %s: %#v", ev.Type, ev.Object)
		}
		switch ev.Type {
		case watch.Added:
			i := len(created)
			if want := fmt.Sprintf("db-%d", i); pod.Name != want {
				t.Fatalf("pod %s created as number %d; want %s", pod.Name, i, want)
			}
			if i > 0 && !ready[created[i-1]] {
				t.Fatalf("pod %s created before %s was Ready", pod.Name, created[i-1])
			}
			created = append(created, pod.Name)
		case watch.Deleted:
			t.Fatalf("pod %s deleted during start-up", pod.Name)
		}
		if e2eenv.PodReady(pod) {
			ready[pod.Name] = true
		}
	}
	e2eenv.WaitFor(t, ctx, "statefulset status", func(ctx context.Context) (bool, string, error) {
		got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return got.Status.ReadyReplicas == n, fmt.Sprintf("readyReplicas=%d", got.Status.ReadyReplicas), nil
	})
}

// TestDeletingDeploymentCollectsPods checks the garbage collector with both
// propagation policies that delete dependents.
func TestDeletingDeploymentCollectsPods(t *testing.T) {
	t.Parallel()
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			ctx, cs, ns := setup(t)
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("gc", 10), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitDeploymentReady(t, ctx, cs, ns, "gc", 10)

			if err := cs.AppsV1().Deployments(ns).Delete(ctx, "gc", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatal(err)
			}
			// With Foreground the deployment goes last, once its
			// dependents are gone; with Background it goes first.
			e2eenv.WaitFor(t, ctx, "the deployment, its replica set and pods to be gone", func(ctx context.Context) (bool, string, error) {
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, "", err
				}
				rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, "", err
				}
				deploys, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, "", err
				}
				return len(pods.Items)+len(rss.Items)+len(deploys.Items) == 0,
					fmt.Sprintf("%d pods, %d replica sets, %d deployments left", len(pods.Items), len(rss.Items), len(deploys.Items)), nil
			})
		})
	}
}

func TestZoneNodeSelectorPlacesPodsInZone(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	const zone = "zone-b"
	d := deployment("zonal", 12)
	d.Spec.Template.Spec.NodeSelector = map[string]string{localcluster.ZoneLabel: zone}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitDeploymentReady(t, ctx, cs, ns, "zonal", 12)

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, n := range nodes.Items {
		zoneOf[n.Name] = n.Labels[localcluster.ZoneLabel]
	}
	for _, p := range pods {
		if zoneOf[p.Spec.NodeName] != zone {
			t.Errorf("pod %s is on node %q in zone %q; want zone %s", p.Name, p.Spec.NodeName, zoneOf[p.Spec.NodeName], zone)
		}
	}
}
