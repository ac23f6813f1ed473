package v1alpha1

// DefaultReplicas is the replicas of a TApp or UnitedDeployment (and, as the API server
// defaults them, of a Deployment or StatefulSet) whose spec.replicas is unset.
const DefaultReplicas int32 = 1

// ReplicasOrDefault is a spec.replicas with its default: every reader of an unset replicas,
// the agent's and the plugin's, must agree on what it means.
func ReplicasOrDefault(replicas *int32) int32 {
	if replicas == nil {
		return DefaultReplicas
	}
	return *replicas
}
