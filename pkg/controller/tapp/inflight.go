package tapp

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// inFlightTTL bounds how long a pod write may stay unseen before the controller stops waiting for
// it (a lost watch event must not block an instance forever).
const inFlightTTL = 2 * time.Minute

// pendingWrites remembers the pod patches (in-place updates, readiness gate changes) the
// controller issued but its pod cache does not show yet. It plays for patches the role that
// expectations play for creations and deletions: while the cache lags, the next sync would see
// the pod unchanged and patch it again (or count a pod it just took down as still available and
// take down one more).
type pendingWrites struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	m     map[string]pendingWrite
}

type pendingWrite struct {
	uid types.UID
	// resourceVersion is the version the write was based on: a status-only write is pending while
	// the cache still holds that version.
	resourceVersion string
	// hash, for an in-place update, is the target template hash: the update is pending until the
	// cached pod carries it.
	hash string
	// resources, for a resize-only update (which changes no label), is the target template: the
	// update is pending until the cached pod's spec has its resources.
	resources *templateInfo
	expires   time.Time
}

func newPendingWrites(c clock.PassiveClock) *pendingWrites {
	return &pendingWrites{clock: c, m: map[string]pendingWrite{}}
}

// expectStatus records a status patch based on pod's current version.
func (p *pendingWrites) expectStatus(pod *corev1.Pod) {
	p.set(pod, pendingWrite{uid: pod.UID, resourceVersion: pod.ResourceVersion})
}

// expectTemplate records an in-place update of pod to the template with the given hash.
func (p *pendingWrites) expectTemplate(pod *corev1.Pod, hash string) {
	p.set(pod, pendingWrite{uid: pod.UID, hash: hash})
}

// expectResources records a resize-only update of pod to template info.
func (p *pendingWrites) expectResources(pod *corev1.Pod, info *templateInfo) {
	p.set(pod, pendingWrite{uid: pod.UID, resources: info})
}

func (p *pendingWrites) set(pod *corev1.Pod, w pendingWrite) {
	w.expires = p.clock.Now().Add(inFlightTTL)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[expectations.ObjectKey(pod)] = w
}

// forget drops the record of pod (the write failed, or the pod is gone).
func (p *pendingWrites) forget(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, expectations.ObjectKey(pod))
}

// inFlight reports whether a write to pod is still not visible in this cached copy of it. A
// record that the cache has caught up with, that belongs to an older pod of the same name, or
// that expired is dropped.
func (p *pendingWrites) inFlight(pod *corev1.Pod) bool {
	key := expectations.ObjectKey(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[key]
	if !ok {
		return false
	}
	pending := w.uid == pod.UID && p.clock.Now().Before(w.expires)
	if pending {
		switch {
		case w.resources != nil:
			pending = !resourcesMatch(pod, w.resources)
		case w.hash != "":
			pending = pod.Labels[appsv1alpha1.LabelTemplateHash] != w.hash
		default:
			pending = pod.ResourceVersion == w.resourceVersion
		}
	}
	if !pending {
		delete(p.m, key)
	}
	return pending
}
