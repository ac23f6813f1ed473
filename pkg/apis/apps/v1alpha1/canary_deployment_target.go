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
