// Package expectations lets a controller remember the writes it has issued
// but not yet seen come back through its informers.
//
// A controller decides how many pods to create or delete by comparing the
// desired replica count with the pods in its informer cache. That cache lags
// the API server: right after a sync has created three pods, the next sync
// (triggered, say, by a status update) may still see the old pod list and
// create three more. Expectations close that window. Before issuing writes the
// controller records how many it expects to observe; informer handlers lower
// the record as the matching events arrive; and the sync loop only acts on
// the cache once SatisfiedExpectations reports that the cache has caught up.
//
// Watch events can be lost (a watch can close and a re-list can fold a
// create and delete together), so every record carries a timestamp and
// counts as satisfied once it is older than a TTL. Without that, a single
// missed event would stop the controller from ever acting on the object
// again.
//
// The design follows the controller utilities of kube-controller-manager
// (k8s.io/kubernetes/pkg/controller), reimplemented here so that the
// workload-agent does not depend on k8s.io/kubernetes.
package expectations
