package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultMaxSurge is a Canary's spec.maxSurge when unset.
var DefaultMaxSurge = intstr.FromString("25%")

// DefaultProgressDeadlineSeconds is a Canary's spec.progressDeadlineSeconds when unset.
const DefaultProgressDeadlineSeconds int32 = 600

// ReleaseStep is one step of a Canary's release with its size resolved: what the agent runs and
// the plugin shows.
type ReleaseStep struct {
	// Replicas is the number of canary pods the step holds.
	Replicas int32
	// Pause is the step's wait once its pods are available: nil for none; without a duration,
	// until a promote.
	Pause *CanaryPause
	// Analysis names the checks of spec.analysis that run while the step bakes.
	Analysis []string
	// Subsets are the subsets of a UnitedDeployment target the step releases (with those of the
	// steps before); Replicas is then 0 until the agent counts their pods.
	Subsets []string
}

// CanarySteps returns the steps of spec's release, in order (element i is step i+1).
//
// spec.steps are taken as written, each replicas resolved (a percentage of spec.replicas rounded
// half up, capped at spec.replicas); when the last holds fewer than spec.replicas, a final step
// of every replica without pause follows, so a release always ends with the stable Deployment
// empty. spec.batches and spec.batchSizes are shorthands: their batch plan (CanaryBatchPlan) as
// steps, each pausing until a promote as spec.pauseType says (First: after step 1; All: after
// every step but the last; None: never). spec.blueGreen is written as steps too (BlueGreenSteps).
func CanarySteps(spec *CanarySpec) ([]ReleaseStep, error) {
	if spec.BlueGreen != nil {
		return BlueGreenSteps(spec), nil
	}
	if len(spec.Steps) == 0 {
		return shorthandSteps(spec)
	}
	if spec.Batches != nil || len(spec.BatchSizes) > 0 {
		return nil, fmt.Errorf("set exactly one of steps, batches or batchSizes")
	}
	if spec.Replicas < 0 {
		return nil, fmt.Errorf("replicas is %d; it cannot be negative", spec.Replicas)
	}
	steps := make([]ReleaseStep, 0, len(spec.Steps)+1)
	for i, s := range spec.Steps {
		if len(s.Subsets) > 0 {
			steps = append(steps, ReleaseStep{Pause: s.Pause, Analysis: s.Analysis, Subsets: s.Subsets})
			continue
		}
		n, err := stepReplicas(s.Replicas, spec.Replicas)
		if err != nil {
			return nil, fmt.Errorf("steps[%d].replicas: %v", i, err)
		}
		steps = append(steps, ReleaseStep{Replicas: n, Pause: s.Pause, Analysis: s.Analysis})
	}
	// Subsets steps are counted by the agent, which adds the final step when they leave
	// subsets out.
	if last := steps[len(steps)-1]; len(last.Subsets) == 0 && last.Replicas < spec.Replicas {
		steps = append(steps, ReleaseStep{Replicas: spec.Replicas})
	}
	return steps, nil
}

// shorthandSteps writes spec.batches or spec.batchSizes with spec.pauseType as steps.
func shorthandSteps(spec *CanarySpec) ([]ReleaseStep, error) {
	plan, err := CanaryBatchPlan(spec)
	if err != nil {
		return nil, err
	}
	steps := make([]ReleaseStep, len(plan))
	for i, size := range plan {
		last := i == len(plan)-1
		steps[i].Replicas = size
		pause := false
		switch spec.PauseType {
		case PauseAll:
			pause = !last
		case PauseNone:
		default: // First, the default
			pause = i == 0 && !last
		}
		if pause {
			steps[i].Pause = &CanaryPause{}
		}
	}
	return steps, nil
}

// stepReplicas resolves a step's replicas: a pod count, or a percentage of replicas rounded
// half up; either capped at replicas.
func stepReplicas(v intstr.IntOrString, replicas int32) (int32, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%d is not a number of pods", v.IntVal)
		}
		return min(v.IntVal, replicas), nil
	}
	p, ok := percent(v.StrVal)
	if !ok {
		return 0, fmt.Errorf("%q is neither a number of pods nor a percentage from 0%% to 100%%", v.StrVal)
	}
	return int32((int64(p)*int64(replicas) + 50) / 100), nil
}

// percent parses "N%".
func percent(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	p, err := strconv.Atoi(digits)
	if !ok || err != nil || p < 0 || p > 100 {
		return 0, false
	}
	return p, true
}

// CanaryMaxSurge is how many pods above spec.replicas the stable and canary Deployments may run
// together: spec.maxSurge (default 25%), a percentage of replicas rounded up as a Deployment's
// maxSurge is, and at least 1 so that a release can always start.
func CanaryMaxSurge(spec *CanarySpec) (int32, error) {
	ms := DefaultMaxSurge
	if spec.MaxSurge != nil {
		ms = *spec.MaxSurge
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&ms, int(spec.Replicas), true)
	if err != nil {
		return 0, fmt.Errorf("maxSurge: %v", err)
	}
	return max(int32(n), 1), nil
}

// CanaryProgressDeadline is spec.progressDeadlineSeconds with its default.
func CanaryProgressDeadline(spec *CanarySpec) time.Duration {
	s := DefaultProgressDeadlineSeconds
	if spec.ProgressDeadlineSeconds != nil {
		s = *spec.ProgressDeadlineSeconds
	}
	return time.Duration(s) * time.Second
}
