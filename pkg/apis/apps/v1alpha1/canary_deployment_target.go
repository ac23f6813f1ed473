package v1alpha1

// Canary Event reasons of a Deployment target (spec.targetRef of kind Deployment).
const (
	// EventTargetPaused: the agent paused the target Deployment (the hold) or resumed it (the
	// hand-over, or the Canary deleted between releases).
	EventTargetPaused = "TargetPaused"
	// EventCanaryDeleted: the agent deleted the temporary canary Deployment at the end of a
	// release or of its rollback.
	EventCanaryDeleted = "CanaryDeploymentDeleted"
)

// TemporaryCanaryName is the name of the canary Deployment a Canary whose spec.targetRef is a
// Deployment creates for each release (and deletes at its end).
func TemporaryCanaryName(canary string) string { return canary + "-canary" }

// Total is the number of pods a Canary's release serves, as a reader of the Canary (the plugin)
// tells it: spec.replicas; without it (a targetRef followed, docs/canary.md "Autoscaling") the
// total a Deployment target's release recorded, else the pods the release runs now (the
// target's replicas, as the agent last read them).
func (c *Canary) Total() int32 {
	switch {
	case c.Spec.Replicas != 0:
		return c.Spec.Replicas
	case c.Status.ReleaseReplicas != 0:
		return c.Status.ReleaseReplicas
	}
	return c.Status.Replicas
}
