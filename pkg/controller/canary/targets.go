package canary

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// targetIndex indexes Canaries by the kind/namespace/name of their targetRef.
const targetIndex = "canary.apps.workload.dev/targets"

func indexByTarget(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok {
		return nil, nil
	}
	ref := releaseFor(cn).target(cn)
	if ref == nil {
		return nil, nil
	}
	return []string{targetKey(ref.Kind, cn.Namespace, ref.Name)}, nil
}

func targetKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// targetHandler enqueues the Canaries that target a workload of kind on its events.
func (c *Controller) targetHandler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		o, err := expectations.ObjectFromDeleteEvent(obj)
		if err != nil {
			return
		}
		canaries, _ := c.canaryIndexer.ByIndex(targetIndex, targetKey(kind, o.GetNamespace(), o.GetName()))
		for _, cn := range canaries {
			c.Enqueue(cn)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// holder returns the name of the Canary that holds cn's target when it is another one: of all
// Canaries that target it, the oldest (by name when as old) holds it.
func (c *Controller) holder(cn *v1alpha1.Canary) string {
	ref := cn.Spec.TargetRef
	objs, err := c.canaryIndexer.ByIndex(targetIndex, targetKey(ref.Kind, cn.Namespace, ref.Name))
	if err != nil {
		return ""
	}
	first := cn
	for _, obj := range objs {
		o := obj.(*v1alpha1.Canary)
		if o.DeletionTimestamp != nil || o.UID == cn.UID {
			continue
		}
		if o.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&first.CreationTimestamp) && o.Name < first.Name) {
			first = o
		}
	}
	if first == cn {
		return ""
	}
	return first.Name
}

// referenceTarget records the workload a Canary's release holds (ref; nil for none) with every
// kind's source; it reports whether it is listed.
func (c *Controller) referenceTarget(key cache.ObjectName, ref *v1alpha1.CanaryTargetRef) bool {
	listed := true
	for kind, k := range c.targets {
		name := ""
		if ref != nil && ref.Kind == kind {
			name = ref.Name
		}
		if !k.reference(key, name) {
			listed = false
		}
	}
	return listed
}

// forgetTarget drops a deleted Canary's references.
func (c *Controller) forgetTarget(key cache.ObjectName) {
	for _, k := range c.targets {
		k.forget(key)
	}
}
