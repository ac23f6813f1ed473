package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// targetState is a target workload as the step machine reads it, whatever its kind.
type targetState struct {
	// observed: the workload's controller has observed its latest spec, so the rest is current.
	observed bool
	// replicas is the workload's desired pod count; updated, available and ready count its pods.
	replicas, updated, available, ready int32
	// updateRevision is the revision of its current template; currentRevision the revision its
	// pods ran when its last update finished (equal once every pod runs the update revision).
	updateRevision, currentRevision string
	// held is the number of pods its partition keeps on the current revision.
	held int32
}

// unreachableTarget is a target part of whose pods run in member clusters the agent cannot
// reach now (a UnitedDeployment's cluster subsets): a progressing release says which.
type unreachableTarget interface {
	unreachable() string
}

// targetKind is one kind of workload a Canary releases in place.
type targetKind interface {
	// get returns the workload from the agent's cache, reading what the cache does not hold
	// with the sync's context; nil (and no error) when it does not exist.
	get(ctx context.Context, namespace, name string) (targetWorkload, error)
	// latest reads the workload from the API server, not the cache, which may not show the
	// hold written moments before: as its Canary is deleted, the hold is let go from it. nil
	// (and no error) when it does not exist.
	latest(ctx context.Context, c *Controller, namespace, name string) (heldWorkload, error)
	// reference records the workload a Canary targets (name "" for none) and reports whether it
	// is listed yet; forget drops a deleted Canary's reference.
	reference(canary cache.ObjectName, name string) bool
	forget(canary cache.ObjectName)
	// run starts what the kind watches by itself (nothing when it reads a shared informer).
	run(ctx context.Context)
}

// listedKind is embedded by the kinds read from a shared informer that lists every object of the
// kind (our own kinds, which the agent's controllers cache anyway): nothing to reference, forget
// or run.
type listedKind struct{}

func (listedKind) reference(cache.ObjectName, string) bool { return true }
func (listedKind) forget(cache.ObjectName)                 {}
func (listedKind) run(context.Context)                     {}

// found turns what a lister's or a client's Get returns into what a targetKind's get or
// latest does: NotFound is no workload (nil, nil), an object is wrapped.
func found[T, W any](wrap func(T) W) func(T, error) (W, error) {
	return func(obj T, err error) (W, error) {
		var none W
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		if err != nil {
			return none, err
		}
		return wrap(obj), nil
	}
}

// targetWorkload is one target workload as read by a sync.
type targetWorkload interface {
	metav1.Object
	state() targetState
	// unsupported says why a Canary cannot release the workload as it is configured ("" when
	// it can), and what to change.
	unsupported() string
	// write makes one decided write of the workload; it returns what it did, for the Event.
	write(ctx context.Context, c *Controller, cn *v1alpha1.Canary, w targetWrite) (string, error)
}

// stepCounter is a target whose steps may count their pods from the workload itself (a
// UnitedDeployment's steps that name subsets): countSteps sets each step's pods, or says why
// the steps do not fit the workload.
type stepCounter interface {
	countSteps(cn *v1alpha1.Canary, steps *[]step) string
}

// targetConverger is a target workload whose pods the agent moves itself rather than the
// workload's controller (a DaemonSet, held with updateStrategy OnDelete): after the plan's
// writes, converge moves them towards keep pods off the update revision, a few at a time within
// the workload's maxUnavailable, and says what it did ("" for nothing). held says the plan has
// just held the workload (its partition written), which the target as read does not show yet.
type targetConverger interface {
	converge(ctx context.Context, c *Controller, keep int32, held bool) (string, error)
}

// setTargetKind gives the controller the source of one targetRef kind (its named watch or
// shared informer; a test's lister).
func (c *Controller) setTargetKind(kind string, k targetKind) {
	if c.targets == nil {
		c.targets = map[string]targetKind{}
	}
	c.targets[kind] = k
}

// targetWriteKind says what a targetWrite does.
type targetWriteKind int

const (
	setPartition targetWriteKind = iota
	restoreTemplate
)

// targetWrite is one decided write of the target workload.
type targetWrite struct {
	kind      targetWriteKind
	partition int32  // setPartition: the pods kept on the current revision
	step      int32  // setPartition: the step it is for (0 between releases)
	revision  string // restoreTemplate: the revision whose template is written back
	reason    string // restoreTemplate: why, for its Event
}

// heldWorkload is a target workload as its Canary's deletion finds it.
type heldWorkload interface {
	// held reports whether the workload carries the Canary's hold (a partition, an update
	// strategy).
	held() bool
	// midRelease, while a release is under way, says what the hold keeps and how to finish or
	// undo the release by hand ("" when none is): letting it go would update the rest of the
	// pods without steps.
	midRelease() string
	// unhold lets the workload update its pods by itself again and says what it did.
	unhold(ctx context.Context, c *Controller) (string, error)
}

// releaseTargetHold, as a Canary that releases a workload in place is deleted, lets the
// workload update its pods by itself again when no release is under way; mid-release it leaves
// the hold and says so with an Event.
func (c *Controller) releaseTargetHold(ctx context.Context, kind targetKind, cn *v1alpha1.Canary) error {
	ref := cn.Spec.TargetRef
	w, err := kind.latest(ctx, c, cn.Namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
	}
	if w == nil || !w.held() {
		return nil
	}
	if msg := w.midRelease(); msg != "" {
		c.eventf(cn, corev1.EventTypeWarning, v1alpha1.EventPartitionSet, "Canary deleted mid-release: %s", msg)
		return nil
	}
	done, err := w.unhold(ctx, c)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing the hold of %s %s: %w", ref.Kind, ref.Name, err)
	}
	c.eventf(cn, corev1.EventTypeNormal, v1alpha1.EventPartitionSet, "Canary deleted: %s", done)
	return nil
}

// ownedRevision reads a ControllerRevision of owner from the API server, checked to be owner's:
// a revision of another workload of the same name (deleted and re-created) is never written
// back.
func (c *Controller) ownedRevision(ctx context.Context, owner metav1.Object, kind, name string) (*appsv1.ControllerRevision, error) {
	rev, err := c.kubeClient.AppsV1().ControllerRevisions(owner.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ControllerRevision %q: %w", name, err)
	}
	if !metav1.IsControlledBy(rev, owner) {
		return nil, fmt.Errorf("ControllerRevision %q does not belong to %s %q", name, kind, owner.GetName())
	}
	return rev, nil
}
