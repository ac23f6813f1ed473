package localcluster

import (
	"context"
	"io"
	"log"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func finisherPod(name string, uid types.UID, node string, terminating bool, grace *int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(30 * time.Second)}
		if grace == nil {
			grace = new(int64(30))
		}
		p.DeletionGracePeriodSeconds = grace
	}
	return p
}

// TestPodFinisher runs the finisher's decisions against listers filled by hand and a fake
// client: which pods get the kubelet's final delete, and with which options.
func TestPodFinisher(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "kwok-a", Annotations: map[string]string{kwokNodeAnnotation: "fake"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "real"}},
	} {
		obj, _ := stripForFinisher(n)
		if err := nodes.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	cached := []*corev1.Pod{
		finisherPod("terminating", "uid-1", "kwok-a", true, nil),
		finisherPod("running", "uid-2", "kwok-a", false, nil),
		finisherPod("on-real-node", "uid-3", "real", true, nil),
		finisherPod("at-zero", "uid-4", "kwok-a", true, new(int64)),
		finisherPod("replaced", "uid-new", "kwok-a", false, nil), // the cache shows the new pod
	}
	for _, p := range cached {
		obj, _ := stripForFinisher(p)
		if err := pods.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	client := fake.NewClientset()
	f := &podFinisher{
		client: client,
		pods:   corelisters.NewPodLister(pods),
		nodes:  corelisters.NewNodeLister(nodes),
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[podRef]()),
		logger: log.New(io.Discard, "", 0),
	}
	defer f.queue.ShutDown()

	for _, p := range cached {
		f.enqueue(p)
	}
	if n := f.queue.Len(); n != 1 {
		t.Fatalf("%d pods queued; want only the terminating one on a kwok node", n)
	}
	refs := []podRef{
		{namespace: "ns", name: "terminating", uid: "uid-1"},
		{namespace: "ns", name: "replaced", uid: "uid-old"}, // queued before the pod was replaced
		{namespace: "ns", name: "gone", uid: "uid-5"},
	}
	for _, ref := range refs {
		if err := f.finish(context.Background(), ref); err != nil {
			t.Fatalf("finish %v: %v", ref, err)
		}
	}
	var deletes []core.DeleteAction
	for _, a := range client.Actions() {
		if d, ok := a.(core.DeleteAction); ok {
			deletes = append(deletes, d)
		}
	}
	if len(deletes) != 1 || deletes[0].GetName() != "terminating" {
		t.Fatalf("deletes %v; want one, of pod terminating", deletes)
	}
	opts := deletes[0].GetDeleteOptions()
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		t.Errorf("grace period %v; want 0", opts.GracePeriodSeconds)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-1" {
		t.Errorf("preconditions %+v; want the pod's UID", opts.Preconditions)
	}
	// The fake API has no such pod: NotFound ends the work, it is not an error.
}

func TestStripForFinisher(t *testing.T) {
	p := finisherPod("p", "uid", "kwok-a", true, nil)
	p.Labels = map[string]string{"app": "x"}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
	p.Status.Phase = corev1.PodRunning
	obj, err := stripForFinisher(p)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Pod)
	if got.Name != "p" || got.UID != "uid" || got.Spec.NodeName != "kwok-a" || got.DeletionTimestamp == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Errorf("stripped pod lost what the finisher reads: %+v", got)
	}
	if got.Labels != nil || got.Spec.Containers != nil || got.Status.Phase != "" {
		t.Errorf("stripped pod kept more than the finisher reads: %+v", got)
	}
}
