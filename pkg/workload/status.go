package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// RolloutState sums up where a workload's rollout stands.
type RolloutState string

const (
	// StateProgressing: the rollout is moving (or the status is older than the spec).
	StateProgressing RolloutState = "Progressing"
	// StatePaused: the rollout waits for a person: paused, a Canary batch waiting for promote, or
	// pods held on the old revision by a partition.
	StatePaused RolloutState = "Paused"
	// StateComplete: every pod runs the latest spec and is available, as of the latest generation.
	StateComplete RolloutState = "Complete"
	// StateDegraded: the rollout failed or was rolled back; it will not complete by itself.
	StateDegraded RolloutState = "Degraded"
)

// RolloutStatus is what a StatusViewer reads from an object.
type RolloutStatus struct {
	State RolloutState
	// Phase is the one word shown for the object: the state, or a Canary's own phase (which
	// says more, such as RollingBack or RolledBack).
	Phase string
	// Summary is one line saying where the rollout stands, without the object's name.
	Summary string
	// Progress holds a line per batch, subset or group of instances (may be empty).
	Progress []string
	// Stale is true while the status describes an older generation than the spec: the
	// controller has not caught up, so the status cannot say the rollout is complete.
	Stale bool
}

// Done reports whether the rollout is complete.
func (s RolloutStatus) Done() bool { return s.State == StateComplete }

// Degraded reports whether the rollout failed.
func (s RolloutStatus) Degraded() bool { return s.State == StateDegraded }

// Paused reports whether the rollout waits for a person.
func (s RolloutStatus) Paused() bool { return s.State == StatePaused }

// StatusViewer reads a rollout's progress from an object, after kubectl's polymorphic
// StatusViewer.
type StatusViewer interface {
	Status(obj *unstructured.Unstructured) (RolloutStatus, error)
}

// Viewable lists the kinds whose rollout status can be read: every workload.
var Viewable = kindsWith[StatusViewer]()

// StatusViewerFor returns the StatusViewer of a kind.
func StatusViewerFor(k Kind) (StatusViewer, error) {
	v, ok := k.helper.(StatusViewer)
	if !ok {
		return nil, fmt.Errorf("no status viewer for a %s", k.Name)
	}
	return v, nil
}

// RolloutStatusOf is StatusViewerFor(k).Status(obj).
func RolloutStatusOf(k Kind, obj *unstructured.Unstructured) (RolloutStatus, error) {
	v, err := StatusViewerFor(k)
	if err != nil {
		return RolloutStatus{}, err
	}
	return v.Status(obj)
}

func fromUnstructured(obj *unstructured.Unstructured, into interface{}) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("reading %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

func status(state RolloutState, summary string, progress []string) RolloutStatus {
	return RolloutStatus{State: state, Phase: string(state), Summary: summary, Progress: progress}
}

// staleStatus is the status of an object whose controller has not observed its latest spec.
func staleStatus(controller string, generation, observed int64, progress []string) RolloutStatus {
	s := status(StateProgressing, "", progress)
	s.Stale = true
	if observed == 0 {
		s.Summary = fmt.Sprintf("waiting for %s to report status", controller)
		if controller == agentName {
			s.Summary += " (is the agent installed and running? see kubectl workload install)"
		}
	} else {
		s.Summary = fmt.Sprintf("waiting for %s to observe the latest spec (generation %d; status is of generation %d)", controller, generation, observed)
	}
	return s
}

const (
	agentName = "the workload-agent"
	kcmName   = "kube-controller-manager"
)

func trueCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

func plural(n int32, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
