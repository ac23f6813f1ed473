package expectations

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// ObjectKey returns the namespace/name key for obj (just name for
// cluster-scoped objects), matching cache.MetaNamespaceKeyFunc. Controller
// keys and tracked pod keys must be built the same way on the write path and
// in informer handlers, or observations silently miss their records.
func ObjectKey(obj metav1.Object) string {
	return cache.MetaObjectToName(obj).String()
}

// ObjectFromDeleteEvent extracts the object from an informer delete
// notification. When a watch drops and the re-list finds the object gone, the
// informer delivers a cache.DeletedFinalStateUnknown tombstone instead of the
// object; a handler that ignored tombstones would never observe that deletion
// and the controller would wait out the full TTL.
func ObjectFromDeleteEvent(obj interface{}) (metav1.Object, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o, ok := tombstone.Obj.(metav1.Object)
		if !ok {
			return nil, fmt.Errorf("tombstone for %q contains %T, not a Kubernetes object", tombstone.Key, tombstone.Obj)
		}
		return o, nil
	}
	if tombstone, ok := obj.(*cache.DeletedFinalStateUnknown); ok && tombstone != nil {
		return ObjectFromDeleteEvent(*tombstone)
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("delete event carries %T, not a Kubernetes object", obj)
	}
	return o, nil
}
