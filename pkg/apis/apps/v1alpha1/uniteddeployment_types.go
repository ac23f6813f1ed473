package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// UnitedDeployment runs one service across zones: one workload (StatefulSet, Deployment or TApp)
// per subset of nodes, with replicas split among the subsets and updates released subset by
// subset through per-subset partitions.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ud,categories=workload
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Replicas asked for across all subsets"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Ready pods across all subsets"
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`,description="Pods on the updated revision"
// +kubebuilder:printcolumn:name="Updated-Ready",type=integer,JSONPath=`.status.updatedReadyReplicas`,description="Ready pods on the updated revision"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Current-Revision",type=string,JSONPath=`.status.currentRevision`,priority=1,description="Revision every replica ran last"
// +kubebuilder:printcolumn:name="Updated-Revision",type=string,JSONPath=`.status.updatedRevision`,priority=1,description="Revision of the current spec.template"
type UnitedDeployment struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the service across its subsets.
	Spec UnitedDeploymentSpec `json:"spec"`
	// Status is the state of the subsets as last observed by the agent.
	// +optional
	Status UnitedDeploymentStatus `json:"status,omitempty"`
}

// UnitedDeploymentSpec is the desired state of a UnitedDeployment.
//
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.manualUpdate) || !has(self.updateStrategy.manualUpdate.partitions) || self.updateStrategy.manualUpdate.partitions.all(name, has(self.topology.subsets) && self.topology.subsets.exists(s, s.name == name))",message="every key of updateStrategy.manualUpdate.partitions must name a subset in topology.subsets"
type UnitedDeploymentSpec struct {
	// Replicas is the total number of pods across all subsets. Defaults to 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of every subset; it must match the template's pod labels.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the workload each subset runs: exactly one of statefulSetTemplate,
	// deploymentTemplate or tappTemplate.
	Template SubsetTemplate `json:"template"`

	// Topology lists the subsets (zones) the service is spread over.
	Topology Topology `json:"topology"`

	// UpdateStrategy says how subsets move to a changed template.
	// +kubebuilder:default={type: Manual}
	// +optional
	UpdateStrategy UnitedDeploymentUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions of spec.template are kept for
	// undo. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=10
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// SubsetTemplate holds the workload template of the subsets: exactly one field is set.
//
// +kubebuilder:validation:XValidation:rule="(has(self.statefulSetTemplate) ? 1 : 0) + (has(self.deploymentTemplate) ? 1 : 0) + (has(self.tappTemplate) ? 1 : 0) == 1",message="set exactly one of statefulSetTemplate, deploymentTemplate or tappTemplate"
type SubsetTemplate struct {
	// StatefulSetTemplate makes every subset a StatefulSet.
	// +optional
	StatefulSetTemplate *StatefulSetTemplateSpec `json:"statefulSetTemplate,omitempty"`
	// DeploymentTemplate makes every subset a Deployment. A Deployment cannot hold pods on an old
	// revision, so its subsets accept only partition 0 (use paused instead).
	// +optional
	DeploymentTemplate *DeploymentTemplateSpec `json:"deploymentTemplate,omitempty"`
	// TAppTemplate makes every subset a TApp.
	// +optional
	TAppTemplate *TAppTemplateSpec `json:"tappTemplate,omitempty"`
}

// StatefulSetTemplateSpec is the template of a StatefulSet subset.
type StatefulSetTemplateSpec struct {
	// Metadata of the subset StatefulSets (labels and annotations are copied to each).
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec of the subset StatefulSets; replicas and partition are set by the agent per subset.
	Spec appsv1.StatefulSetSpec `json:"spec"`
}

// DeploymentTemplateSpec is the template of a Deployment subset.
type DeploymentTemplateSpec struct {
	// Metadata of the subset Deployments (labels and annotations are copied to each).
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec of the subset Deployments; replicas and paused are set by the agent per subset.
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// TAppTemplateSpec is the template of a TApp subset.
type TAppTemplateSpec struct {
	// Metadata of the subset TApps (labels and annotations are copied to each).
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec of the subset TApps; replicas and partition are set by the agent per subset.
	Spec TAppSpec `json:"spec"`
}

// Topology lists the subsets of a UnitedDeployment.
//
// +kubebuilder:validation:XValidation:rule="!has(self.subsets) || self.subsets.all(s, self.subsets.exists_one(o, o.name == s.name))",message="subset names must be unique"
type Topology struct {
	// Subsets are the groups of nodes (usually zones) that each run one workload.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Subsets []Subset `json:"subsets"`
}

// Subset is one group of nodes, usually a zone, running one workload of the UnitedDeployment.
type Subset struct {
	// Name of the subset: a DNS label, unique within the UnitedDeployment. It becomes part of the
	// subset workload's name (<ud>-<subset>-<suffix>) and the value of its subset label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="subset name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// NodeSelectorTerm is merged into the pod template's required node affinity, so the subset's
	// pods run only on the nodes it selects (for example topology.kubernetes.io/zone In [zone-a]).
	// +optional
	NodeSelectorTerm corev1.NodeSelectorTerm `json:"nodeSelectorTerm,omitempty"`

	// Tolerations are added to the pod template of this subset.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Replicas pins this subset's share: an integer, or a percentage of spec.replicas (rounded
	// half up). Subsets without it share what is left evenly.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="subset replicas must be a non-negative integer or a percentage from 0% to 100%"
	// +optional
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`

	// ClusterProfileRef puts this subset's workload in a member cluster: the SIG-Multicluster
	// ClusterProfile (multicluster.x-k8s.io) on the agent's own cluster that describes the member
	// and how to reach it (docs/fleet.md). NodeSelectorTerm and Tolerations still apply, inside
	// that cluster. Without it the workload runs in the agent's own cluster.
	// +optional
	ClusterProfileRef *ClusterProfileReference `json:"clusterProfileRef,omitempty"`
}

// ClusterProfileReference names a ClusterProfile on the agent's own (hub) cluster.
type ClusterProfileReference struct {
	// Namespace of the ClusterProfile (cluster managers publish them in one namespace of the hub,
	// for example open-cluster-management-addon or fleet-system).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="clusterProfileRef.namespace must be a namespace name (a DNS label)"
	Namespace string `json:"namespace"`
	// Name of the ClusterProfile.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="clusterProfileRef.name must be a ClusterProfile name (a DNS subdomain)"
	Name string `json:"name"`
}

// UpdateStrategyType names how a UnitedDeployment releases a changed template.
// +kubebuilder:validation:Enum=Manual
type UpdateStrategyType string

// ManualUpdateStrategyType releases a changed template subset by subset through partitions.
const ManualUpdateStrategyType UpdateStrategyType = "Manual"

// UnitedDeploymentUpdateStrategy says how subsets move to a changed template.
type UnitedDeploymentUpdateStrategy struct {
	// Type of the update strategy; only Manual (per-subset partitions) exists today.
	// +kubebuilder:default=Manual
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`

	// ManualUpdate holds the per-subset partitions of the Manual strategy.
	// +optional
	ManualUpdate *ManualUpdate `json:"manualUpdate,omitempty"`

	// Paused stops every further update of every subset.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ManualUpdate holds the per-subset partitions.
type ManualUpdate struct {
	// Partitions maps a subset name to the number of its pods kept on the old revision (the
	// ones with the lowest ordinals for StatefulSet and TApp subsets). A subset without an entry
	// has partition 0 (update everything); a value above the subset's replicas is capped.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(name, self[name] >= 0)",message="partitions must not be negative"
	// +optional
	Partitions map[string]int32 `json:"partitions,omitempty"`
}

// UnitedDeploymentStatus is the state of a UnitedDeployment as last observed by the agent.
type UnitedDeploymentStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of pods across all subsets.
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of ready pods across all subsets.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// UpdatedReplicas is the number of pods on the updated revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// UpdatedReadyReplicas is the number of ready pods on the updated revision.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`

	// CurrentRevision is the revision every replica ran when the last update finished.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdatedRevision is the revision of the current spec.template.
	// +optional
	UpdatedRevision string `json:"updatedRevision,omitempty"`

	// CollisionCount counts hash collisions of revision names; it is mixed into the hash so the
	// next revision gets a free name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// LabelSelector is the pods' label selector in string form, for the scale subresource.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`

	// SubsetStatuses describes each subset's workload.
	// +listType=map
	// +listMapKey=name
	// +optional
	SubsetStatuses []SubsetStatus `json:"subsetStatuses,omitempty"`

	// Conditions are the latest observations: SubsetProvisioned, SubsetUpdated, SubsetFailure.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SubsetStatus describes one subset's workload.
type SubsetStatus struct {
	// Name of the subset.
	Name string `json:"name"`
	// Replicas allocated to the subset.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready pods of the subset.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// UpdatedReplicas is the number of the subset's pods on the updated revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// Partition in force for the subset (after capping at its replicas).
	// +optional
	Partition int32 `json:"partition"`
	// Cluster is the member cluster's state, for a subset with a clusterProfileRef.
	// +optional
	Cluster *SubsetClusterStatus `json:"cluster,omitempty"`
}

// SubsetClusterStatus is what the agent last saw of a subset's member cluster.
type SubsetClusterStatus struct {
	// ClusterProfile is the ClusterProfile's namespace/name.
	ClusterProfile string `json:"clusterProfile"`
	// Reachable is true while the ClusterProfile's ControlPlaneHealthy condition is True and the
	// agent's last request to the member succeeded. The counts of an unreachable subset are the
	// last ones seen; a release never counts its wave as passed.
	Reachable bool `json:"reachable"`
	// Message says why the member is not reachable (never a credential).
	// +optional
	Message string `json:"message,omitempty"`
	// LastSeenTime is when the agent last read the member's workload.
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`
}

// UnitedDeployment condition types.
const (
	// SubsetProvisioned is True when every subset's workload exists as the spec asks.
	SubsetProvisioned = "SubsetProvisioned"
	// SubsetUpdated is True when every subset's workload carries the updated revision.
	SubsetUpdated = "SubsetUpdated"
	// SubsetFailure is True when a subset could not be provisioned or updated; the message says why.
	SubsetFailure = "SubsetFailure"
)

// UnitedDeploymentList is a list of UnitedDeployments.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type UnitedDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of UnitedDeployments.
	Items []UnitedDeployment `json:"items"`
}
