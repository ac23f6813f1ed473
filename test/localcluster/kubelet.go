package localcluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// KubeletUserAgent is the User-Agent of the pod finisher's requests (see podFinisher).
const KubeletUserAgent = "localcluster-kubelet"

// podFinisher plays the one part of the kubelet that kwok's stages must not: the final delete
// of a terminating pod on a fake node. The kubelet, once a terminating pod's containers have
// stopped, deletes it with a grace period of 0 and the pod's UID as a precondition, so that a
// pod created since under the same name (a StatefulSet's, a TApp instance's) is never touched.
// kwok v0.8.0's delete step (`next: {delete: true}` in a stage) deletes by name, without
// precondition, from the copy of the pod its stage job holds, and does so twice per pod (on
// the update that sets deletionTimestamp, and on the one its own delete makes when it sets the
// grace period to 0); when kwok lags, the second delete removes the new pod of that name.
// stages.yaml therefore has no delete stage, and this loop deletes instead.
//
// A pod is finished at once (there is no process to stop), whatever its finalizers: as with the
// kubelet, the API server keeps a pod with finalizers, with a grace period of 0, until they are
// removed, then deletes it. A pod already at a grace period of 0 needs nothing more (the API
// server is deleting it, or waits for its finalizers), which also keeps each pod to one delete.
type podFinisher struct {
	client  kubernetes.Interface
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[podRef]
	factory informers.SharedInformerFactory
	logger  *log.Logger
	cancel  context.CancelFunc
	done    sync.WaitGroup
	logFile io.Closer
}

// podRef names one pod: a pod re-created under the same name is another podRef.
type podRef struct {
	namespace, name string
	uid             types.UID
}

const finisherWorkers = 16

// startPodFinisher starts the loop; stop it with stop. Its log (one line per delete, and
// errors) is logDir/localcluster-kubelet.log.
func startPodFinisher(ctx context.Context, cfg *rest.Config, logDir string) (*podFinisher, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = KubeletUserAgent
	// Six kubelets have 50 QPS each; deletions must keep up with any controller under test.
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(logDir, KubeletUserAgent+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	f := &podFinisher{
		client:  client,
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podRef](), workqueue.TypedRateLimitingQueueConfig[podRef]{Name: "localcluster-kubelet"}),
		logger:  log.New(logFile, "", log.LstdFlags|log.Lmicroseconds|log.LUTC),
		logFile: logFile,
	}
	// Only bound pods, and only what the loop reads: the process may share the cluster with
	// tens of thousands of pods.
	f.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripForFinisher))
	nodeInformer := f.factory.Core().V1().Nodes().Informer()
	f.nodes = f.factory.Core().V1().Nodes().Lister()
	podInformer := coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	})
	if err := podInformer.SetTransform(stripForFinisher); err != nil {
		return nil, err
	}
	f.pods = corelisters.NewPodLister(podInformer.GetIndexer())
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.enqueue,
		UpdateFunc: func(_, cur any) { f.enqueue(cur) },
	}); err != nil {
		return nil, err
	}

	// The loop lives until stop, not until ctx (Start's) ends; ctx only bounds the start.
	loopCtx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.factory.Start(loopCtx.Done())
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		podInformer.Run(loopCtx.Done())
	}()
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.HasSynced, podInformer.HasSynced) {
		f.stop()
		return nil, fmt.Errorf("pod finisher: caches not synced: %w", ctx.Err())
	}
	for range finisherWorkers {
		f.done.Add(1)
		go func() {
			defer f.done.Done()
			for f.processNext(loopCtx) {
			}
		}()
	}
	return f, nil
}

// stop stops the loop and waits for it.
func (f *podFinisher) stop() {
	f.cancel()
	f.queue.ShutDown()
	f.factory.Shutdown()
	f.done.Wait()
	_ = f.logFile.Close()
}

// stripForFinisher keeps only the fields the loop reads.
func stripForFinisher(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:                       o.Name,
				Namespace:                  o.Namespace,
				UID:                        o.UID,
				ResourceVersion:            o.ResourceVersion,
				DeletionTimestamp:          o.DeletionTimestamp,
				DeletionGracePeriodSeconds: o.DeletionGracePeriodSeconds,
			},
			Spec: corev1.PodSpec{NodeName: o.Spec.NodeName},
		}, nil
	case *corev1.Node:
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:            o.Name,
			UID:             o.UID,
			ResourceVersion: o.ResourceVersion,
			Annotations:     map[string]string{kwokNodeAnnotation: o.Annotations[kwokNodeAnnotation]},
		}}, nil
	}
	return obj, nil
}

// needsFinishing reports whether pod is terminating on a node kwok plays and has not had the
// kubelet's delete yet.
func (f *podFinisher) needsFinishing(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
		return false
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil && *g == 0 {
		return false
	}
	node, err := f.nodes.Get(pod.Spec.NodeName)
	// The nodes kwok manages (kwokConfigYAML).
	return err == nil && node.Annotations[kwokNodeAnnotation] == "fake"
}

func (f *podFinisher) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !f.needsFinishing(pod) {
		return
	}
	f.queue.Add(podRef{namespace: pod.Namespace, name: pod.Name, uid: pod.UID})
}

func (f *podFinisher) processNext(ctx context.Context) bool {
	ref, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(ref)
	if err := f.finish(ctx, ref); err != nil {
		if ctx.Err() != nil {
			return false
		}
		f.logger.Printf("pod %s/%s (uid %s): %v; retrying", ref.namespace, ref.name, ref.uid, err)
		f.queue.AddRateLimited(ref)
		return true
	}
	f.queue.Forget(ref)
	return true
}

// finish deletes the pod ref names, if the cache still shows it needing it.
func (f *podFinisher) finish(ctx context.Context, ref podRef) error {
	pod, err := f.pods.Pods(ref.namespace).Get(ref.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.UID != ref.uid || !f.needsFinishing(pod) {
		return nil // another pod has the name now, or this one needs nothing more
	}
	uid := ref.uid
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = f.client.CoreV1().Pods(ref.namespace).Delete(ctx, ref.name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The UID precondition failed: the pod is gone and another has its name.
		f.logger.Printf("pod %s/%s (uid %s) already replaced by another pod of that name", ref.namespace, ref.name, ref.uid)
		return nil
	case err != nil:
		return err
	}
	f.logger.Printf("deleted pod %s/%s (uid %s) on node %s", ref.namespace, ref.name, ref.uid, pod.Spec.NodeName)
	return nil
}
