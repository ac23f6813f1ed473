package v1alpha1

// Labels and annotations the agent puts on the objects it creates. Pods and PVCs carry
// LabelManagedBy so that the agent's informers can watch only its own, not every pod of the
// cluster.
const (
	// LabelManagedBy marks pods, PVCs and subset workloads created by the agent.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByAgent is the value of LabelManagedBy on objects the agent created.
	ManagedByAgent = "workload-agent"
	// FieldManagerAgent is the field manager the agent's writes are recorded under in
	// metadata.managedFields (the program name of its User-Agent): the agent tells its own
	// writes from another controller's by it.
	FieldManagerAgent = "workload-agent"

	// LabelTAppName names the TApp that owns a pod or PVC.
	LabelTAppName = "tapp.apps.workload.dev/name"
	// LabelInstanceID is the instance id (0 … replicas-1) of a TApp pod or PVC.
	LabelInstanceID = "tapp.apps.workload.dev/instance-id"
	// LabelTemplateHash is the hash of the whole pod template an instance's pod was made from.
	LabelTemplateHash = "tapp.apps.workload.dev/template-hash"
	// LabelUniqHash is the hash of the pod template with every container image blanked: two
	// templates with the same uniq hash differ only in images, so the pod can be updated in place.
	LabelUniqHash = "tapp.apps.workload.dev/uniq-hash"
	// LabelResizeHash is the hash of the pod template with the values of its containers' cpu and
	// memory zeroed: a pod moves to a template of the same resize hash by a pods/resize alone,
	// and the agent then tells which template it runs from its resources (the resize cannot
	// change LabelTemplateHash).
	LabelResizeHash = "tapp.apps.workload.dev/resize-hash"
	// ConditionInPlaceUpdateReady is the readiness gate of TApp pods: False while an in-place image
	// update is under way, True once every container reports its new image.
	ConditionInPlaceUpdateReady = "tapp.apps.workload.dev/InPlaceUpdateReady"

	// LabelUnitedDeploymentName names the UnitedDeployment that owns a subset workload.
	LabelUnitedDeploymentName = "apps.workload.dev/united-deployment"
	// LabelUnitedDeploymentUID, on a subset workload in a member cluster, is the UID of the hub's
	// UnitedDeployment: it stands for the controller reference a workload in another cluster
	// cannot carry, so that a UnitedDeployment deleted and created again under the same name
	// never adopts the old one's workloads.
	LabelUnitedDeploymentUID = "apps.workload.dev/united-deployment-uid"
	// LabelSubsetName is the subset name of a UnitedDeployment's subset workload.
	LabelSubsetName = "apps.workload.dev/subset"
	// LabelRevision is the ControllerRevision name a subset workload was made from.
	LabelRevision = "apps.workload.dev/revision"

	// LabelCanaryName names the Canary that owns a canary Deployment.
	LabelCanaryName = "apps.workload.dev/canary"
)
