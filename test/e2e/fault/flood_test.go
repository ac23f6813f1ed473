package fault

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// The flood: Deployments (replicas 0), StatefulSets (replicas 0: kube-controller-manager writes
// a ControllerRevision for each) and bare pods in the agent's own namespace, some of them
// carrying the labels of the steady workloads' pods but not the agent's managed-by label.
const floodDeployments, floodStatefulSets, floodPods = 200, 40, 200

// An unrelated-object flood changes nothing: with a TApp and a Canary steady, Deployments,
// StatefulSets and pods the agent did not create — some labelled like the workloads' pods — make
// the agent write nothing at all (audit log, by its identity; its Lease renewals aside), and the
// TApp's and the Canary's objects and statuses stay as they were.
func TestUnrelatedFloodChangesNothing(t *testing.T) {
	e := setup(t)
	e.apply(tappManifest("steady", 3, 1, 0, "registry.invalid/app:v1"))
	e.apply(stableManifest("shop", 4))
	e.apply(canaryManifest("shop-release", "shop", "shop-canary", 4, 2))
	id := identity(t, e.startAgent())
	e.waitRollout(workload.TApp, "steady", workload.StateComplete)
	e.waitRollout(workload.Canary, "shop-release", workload.StateComplete)
	since := e.quietSince(id)
	before := e.snapshot()

	e.flood()
	e.Eventually("the agent to have seen the flood settle", func() (bool, string) {
		rs, _ := e.Kube.AppsV1().ReplicaSets(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "flood"})
		cr, _ := e.Kube.AppsV1().ControllerRevisions(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "flood"})
		return len(rs.Items) >= floodDeployments && len(cr.Items) >= floodStatefulSets,
			fmt.Sprintf("%d ReplicaSets, %d ControllerRevisions", len(rs.Items), len(cr.Items))
	})
	time.Sleep(10 * time.Second) // the agent's watches deliver what they would

	writes, earlier := 0, 0
	for _, ev := range audit(t, id) {
		if !isWrite(ev.Verb) || (ev.ObjectRef != nil && ev.ObjectRef.Resource == "leases") {
			continue
		}
		if ev.Received.Before(since) {
			earlier++
			continue
		}
		writes++
		t.Errorf("the agent wrote during the flood: %s", ev)
	}
	if earlier == 0 {
		t.Error("the audit log has no write by the agent before the flood either: the check proves nothing")
	}
	after := e.snapshot()
	for k, v := range before {
		if !reflect.DeepEqual(after[k], v) {
			t.Errorf("%s changed during the flood:\n  before %v\n  after  %v", k, v, after[k])
		}
	}
	t.Logf("%d Deployments, %d StatefulSets, %d pods of flood; agent writes: %d before, %d since %s",
		floodDeployments, floodStatefulSets, floodPods, earlier, writes, since.Format("15:04:05.000"))
}

// quietSince waits until the agent with the identity has written nothing but its Lease for 5 s,
// and returns the time from which it must stay quiet.
func (e *env) quietSince(id string) time.Time {
	e.T.Helper()
	var since time.Time
	e.Eventually("the agent to be quiet", func() (bool, string) {
		last := time.Time{}
		for _, ev := range audit(e.T, id) {
			if isWrite(ev.Verb) && (ev.ObjectRef == nil || ev.ObjectRef.Resource != "leases") && ev.Received.After(last) {
				last = ev.Received
			}
		}
		since = time.Now()
		return since.Sub(last) > 5*time.Second, "last write at " + last.Format("15:04:05.000")
	})
	return since
}

// snapshot is what must not change: the workloads' statuses and resource versions and the
// identities of their pods and Deployments.
func (e *env) snapshot() map[string]any {
	e.T.Helper()
	out := map[string]any{}
	for _, w := range []struct {
		k    workload.Kind
		name string
	}{{workload.TApp, "steady"}, {workload.Canary, "shop-release"}} {
		obj, err := e.Dyn.Resource(w.k.Resource).Namespace(e.NS).Get(e.Ctx, w.name, metav1.GetOptions{})
		if err != nil {
			e.T.Fatal(err)
		}
		out[w.k.Short+"/"+w.name+" status"] = obj.Object["status"]
		out[w.k.Short+"/"+w.name+" resourceVersion"] = obj.GetResourceVersion()
	}
	for _, name := range []string{"shop", "shop-canary"} {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			e.T.Fatal(err)
		}
		out["deployment/"+name+" generation, replicas"] = fmt.Sprint(d.Generation, *d.Spec.Replicas)
	}
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: tappSelector("steady")})
	if err != nil {
		e.T.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range pods.Items {
		uids[p.Name] = string(p.UID) + " " + p.ResourceVersion
	}
	out["TApp pods"] = uids
	return out
}

// flood creates the unrelated objects, ten clients at a time.
func (e *env) flood() {
	e.T.Helper()
	zero := int32(0)
	// Every third pod carries the TApp's pod labels, every third Deployment's pods the stable
	// Deployment's: only the managed-by label tells them apart.
	labels := func(i int, like map[string]string) map[string]string {
		if i%3 == 0 {
			return map[string]string{"flood": "yes", "app": like["app"], "track": like["track"]}
		}
		return map[string]string{"flood": "yes", "app": fmt.Sprintf("flood-%d", i)}
	}
	template := func(l map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: l},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/flood:v1"}}},
		}
	}
	apps, core := e.Kube.AppsV1(), e.Kube.CoreV1()
	e.createAll("Deployment", floodDeployments, func(ctx context.Context, i int) error {
		l := labels(i, map[string]string{"app": "shop", "track": "stable"})
		l["flood-deployment"] = fmt.Sprint(i) // its own selector: no two Deployments share pods
		_, err := apps.Deployments(e.NS).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i), Labels: map[string]string{"flood": "yes"}},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: l},
				Template: template(l)},
		}, metav1.CreateOptions{})
		return err
	})
	e.createAll("StatefulSet", floodStatefulSets, func(ctx context.Context, i int) error {
		l := map[string]string{"flood": "yes", "flood-sts": fmt.Sprint(i)}
		_, err := apps.StatefulSets(e.NS).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i)},
			Spec: appsv1.StatefulSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: l},
				Template: template(l)},
		}, metav1.CreateOptions{})
		return err
	})
	e.createAll("pod", floodPods, func(ctx context.Context, i int) error {
		p := template(labels(i, map[string]string{"app": "steady"}))
		_, err := core.Pods(e.NS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i), Labels: p.Labels},
			Spec:       p.Spec,
		}, metav1.CreateOptions{})
		return err
	})
}

// createAll runs create for 0..n-1 on ten goroutines and fails the test on the first error.
func (e *env) createAll(what string, n int, create func(ctx context.Context, i int) error) {
	e.T.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := create(e.Ctx, i); err != nil {
					errs <- fmt.Errorf("%s %d: %w", what, i, err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Fatal(err)
	}
}
