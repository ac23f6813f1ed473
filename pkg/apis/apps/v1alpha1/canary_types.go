package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Canary moves serving capacity from a stable Deployment to a canary Deployment in batches,
// pausing for a person's approval where pauseType says, and can roll everything back.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=canary,categories=workload
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Pods asked for across stable and canary"
// +kubebuilder:printcolumn:name="Batch",type=integer,JSONPath=`.status.currentBatch`,description="Batch being released (1-based)"
// +kubebuilder:printcolumn:name="Canary",type=integer,JSONPath=`.status.canaryAvailable`,description="Available canary pods"
// +kubebuilder:printcolumn:name="Stable",type=integer,JSONPath=`.status.stableAvailable`,description="Available stable pods"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Progressing, Paused, Completed, RollingBack, RolledBack or Degraded"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1,description="What the release is doing or waiting for"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: the canary Deployment carries it as the value of label apps.workload.dev/canary"
type Canary struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired release.
	Spec CanarySpec `json:"spec"`
	// Status is the progress of the release as last observed by the agent.
	// +optional
	Status CanaryStatus `json:"status,omitempty"`
}

// PauseType says after which batches a Canary waits for promotion.
// +kubebuilder:validation:Enum=First;All;None
type PauseType string

const (
	// PauseFirst waits for promotion after batch 1 only.
	PauseFirst PauseType = "First"
	// PauseAll waits for promotion after every batch but the last.
	PauseAll PauseType = "All"
	// PauseNone never waits.
	PauseNone PauseType = "None"
)

// CanarySpec is the desired release of a Canary.
//
// +kubebuilder:validation:XValidation:rule="self.canary.name != self.stableRef.name",message="canary.name must differ from stableRef.name: the canary Deployment cannot be the stable one"
// +kubebuilder:validation:XValidation:rule="has(self.batches) != has(self.batchSizes)",message="set exactly one of batches or batchSizes"
// +kubebuilder:validation:XValidation:rule="!has(self.batchSizes) || self.batchSizes.map(b, type(b) == int ? b : (int(b.substring(0, size(b) - 1)) * self.replicas + 50) / 100).isSorted()",message="batchSizes must not decrease: each batch holds at least as many canary pods as the one before"
// +kubebuilder:validation:XValidation:rule="!has(self.batchSizes) || (type(self.batchSizes[self.batchSizes.size() - 1]) == int ? self.batchSizes[self.batchSizes.size() - 1] == self.replicas : self.batchSizes[self.batchSizes.size() - 1] == '100%')",message="the last of batchSizes must be the full size: spec.replicas or \"100%\""
// +kubebuilder:validation:XValidation:rule="!has(self.batches) || self.batches <= self.replicas || self.replicas == 0",message="batches cannot be more than replicas: every batch must add at least one canary pod"
type CanarySpec struct {
	// Replicas is the number of pods serving across the stable and the canary Deployment.
	// Available capacity never drops below it during the release or a rollback.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// StableRef names the Deployment serving today, in the Canary's namespace.
	StableRef StableRef `json:"stableRef"`

	// Canary is the Deployment being released.
	Canary CanaryTarget `json:"canary"`

	// Batches is the number of batches: batch 1 is one pod, later batches grow evenly, and the
	// last holds every replica. Set this or batchSizes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Batches *int32 `json:"batches,omitempty"`

	// BatchSizes lists the canary pods of each batch: integers, or percentages of replicas
	// (rounded half up). They must not decrease and the last must be the full size. Set this or
	// batches.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XIntOrString
	// +kubebuilder:validation:items:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="self.all(b, type(b) == int ? b > 0 : b.matches('^([1-9][0-9]?|100)%$'))",message="each of batchSizes must be a positive integer or a percentage from 1% to 100%"
	// +optional
	BatchSizes []intstr.IntOrString `json:"batchSizes,omitempty"`

	// PauseType says after which batches the release waits for promotion: First (after batch 1
	// only, the default), All (after every batch but the last) or None.
	// +kubebuilder:default=First
	// +optional
	PauseType PauseType `json:"pauseType,omitempty"`

	// Paused holds the release where it is, whatever pauseType says, until set back to false.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ApprovedBatch is the highest batch a person approved to proceed past its pause. Promote
	// sets it to the paused batch's number, so repeating a promote cannot skip a batch; a full
	// promote sets it to the number of batches. A batch whose number is at most approvedBatch
	// does not pause when it completes. It defaults to 0 so that it is always present: a promote
	// is a JSON patch that tests its current value before replacing it, e.g.
	// [{"op":"test","path":"/spec/approvedBatch","value":0},{"op":"replace","path":"/spec/approvedBatch","value":1}].
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	ApprovedBatch int32 `json:"approvedBatch,omitempty"`

	// Rollback, when true, returns all capacity to the stable Deployment: stable is scaled back
	// up first, then the canary down. It works at any batch and after completion.
	// +optional
	Rollback bool `json:"rollback,omitempty"`

	// MinReadySeconds is how long a canary pod must be ready before it counts as available (and
	// a stable pod may go). Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

// StableRef names the stable Deployment.
type StableRef struct {
	// Name of the stable Deployment: a Deployment name (DNS-1123 subdomain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="stableRef.name must be a valid Deployment name (DNS-1123 subdomain): lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// CanaryTarget is the canary Deployment: created and owned by the Canary.
type CanaryTarget struct {
	// Name of the canary Deployment. It must not be the stable Deployment, nor a Deployment that
	// this Canary does not own. A Deployment name (DNS-1123 subdomain): the API server would
	// refuse any other only when the controller creates the Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="canary.name must be a valid Deployment name (DNS-1123 subdomain): lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`

	// Template is the pod template of the canary Deployment.
	Template corev1.PodTemplateSpec `json:"template"`
}

// CanaryPhase sums up a release.
type CanaryPhase string

const (
	CanaryProgressing CanaryPhase = "Progressing"
	CanaryPaused      CanaryPhase = "Paused"
	CanaryCompleted   CanaryPhase = "Completed"
	CanaryRollingBack CanaryPhase = "RollingBack"
	CanaryRolledBack  CanaryPhase = "RolledBack"
	CanaryDegraded    CanaryPhase = "Degraded"
)

// BatchState is the state of one batch.
type BatchState string

const (
	BatchPending   BatchState = "Pending"
	BatchUpgrading BatchState = "Upgrading"
	BatchPaused    BatchState = "Paused"
	BatchCompleted BatchState = "Completed"
)

// CanaryStatus is the progress of a release.
type CanaryStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase sums up the release: Progressing, Paused, Completed, RollingBack, RolledBack or
	// Degraded.
	// +kubebuilder:validation:Enum=Progressing;Paused;Completed;RollingBack;RolledBack;Degraded
	// +optional
	Phase CanaryPhase `json:"phase,omitempty"`

	// Message says in words what the release is doing or waiting for.
	// +optional
	Message string `json:"message,omitempty"`

	// CurrentBatch is the 1-based number of the batch being released (0 before the first).
	// +optional
	CurrentBatch int32 `json:"currentBatch"`

	// Batches describes every batch of the plan.
	// +listType=map
	// +listMapKey=index
	// +optional
	Batches []CanaryBatchStatus `json:"batches,omitempty"`

	// CanaryReplicas is the replica count of the canary Deployment.
	// +optional
	CanaryReplicas int32 `json:"canaryReplicas"`

	// CanaryAvailable is the number of available canary pods.
	// +optional
	CanaryAvailable int32 `json:"canaryAvailable"`

	// StableReplicas is the replica count of the stable Deployment.
	// +optional
	StableReplicas int32 `json:"stableReplicas"`

	// StableAvailable is the number of available stable pods.
	// +optional
	StableAvailable int32 `json:"stableAvailable"`

	// Conditions are the latest observations of the release.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CanaryBatchStatus describes one batch.
type CanaryBatchStatus struct {
	// Index is the 1-based number of the batch.
	Index int32 `json:"index"`
	// CanaryReplicas is the number of canary pods the batch holds.
	CanaryReplicas int32 `json:"canaryReplicas"`
	// State of the batch: Pending, Upgrading, Paused or Completed.
	// +kubebuilder:validation:Enum=Pending;Upgrading;Paused;Completed
	State BatchState `json:"state"`
	// StartTime is when the batch began.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// FinishTime is when every pod of the batch became available.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`
}

// CanaryList is a list of Canaries.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CanaryList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of Canaries.
	Items []Canary `json:"items"`
}
