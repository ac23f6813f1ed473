package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// InstanceDesiredStatus is what a person asks of one TApp instance.
// +kubebuilder:validation:Enum=Running;Killed
type InstanceDesiredStatus string

const (
	// InstanceRunning asks for the instance to run; it is the same as having no entry.
	InstanceRunning InstanceDesiredStatus = "Running"
	// InstanceKilled stops the instance: its pod is deleted and not re-created until the entry is removed.
	InstanceKilled InstanceDesiredStatus = "Killed"
)

// InstanceStatus is what the agent observed of one TApp instance.
type InstanceStatus string

const (
	InstanceNotCreated InstanceStatus = "NotCreated"
	InstancePending    InstanceStatus = "Pending"
	InstanceRunningNow InstanceStatus = "Running"
	InstanceUpdating   InstanceStatus = "Updating"
	InstancePodFailed  InstanceStatus = "PodFailed"
	InstancePodSucc    InstanceStatus = "PodSucc"
	InstanceKilling    InstanceStatus = "Killing"
	InstanceKilledNow  InstanceStatus = "Killed"
	InstanceFailed     InstanceStatus = "Failed"
	InstanceSucc       InstanceStatus = "Succ"
	InstanceUnknown    InstanceStatus = "Unknown"
)

// AppStatus sums up a whole TApp.
// +kubebuilder:validation:Enum=Pending;Running;Failed;Succ;Killed
type AppStatus string

const (
	AppPending AppStatus = "Pending"
	AppRunning AppStatus = "Running"
	AppFailed  AppStatus = "Failed"
	AppSucc    AppStatus = "Succ"
	AppKilled  AppStatus = "Killed"
)

// TApp runs a set of instances with stable identities (ids 0 … replicas-1), each of which can use
// its own pod template, be stopped and started one by one, and be updated in place.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=tapp,categories=workload
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.scaleLabelSelector
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Instances asked for"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Instances whose pod is ready"
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`,description="Instances on their desired template"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.appStatus`,description="Summary of all instances"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.updateStrategy.paused`,priority=1,description="Whether updates are paused"
// +kubebuilder:printcolumn:name="Partition",type=integer,JSONPath=`.spec.updateStrategy.partition`,priority=1,description="Instances with a lower id keep their current template"
type TApp struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the instances.
	Spec TAppSpec `json:"spec"`
	// Status is the state of the instances as last observed by the agent.
	// +optional
	Status TAppStatus `json:"status,omitempty"`
}

// TAppSpec is the desired state of a TApp.
//
// +kubebuilder:validation:XValidation:rule="!has(self.templates) || self.templates.all(id, has(self.templatePool) && self.templates[id] in self.templatePool)",message="every entry of templates must name a template in templatePool"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultTemplateName) || size(self.defaultTemplateName) == 0 || (has(self.templatePool) && self.defaultTemplateName in self.templatePool)",message="defaultTemplateName must name a template in templatePool"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.template) || size(self.updateStrategy.template) == 0 || (has(self.templatePool) && self.updateStrategy.template in self.templatePool)",message="updateStrategy.template must name a template in templatePool"
type TAppSpec struct {
	// Replicas is the number of instances; their ids are 0 … replicas-1. Defaults to 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of this TApp; it must match the labels of every template.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the pod template of every instance that templates and defaultTemplateName do
	// not assign another one.
	Template corev1.PodTemplateSpec `json:"template"`

	// TemplatePool holds named pod templates that instances can be assigned through templates
	// and defaultTemplateName.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	TemplatePool map[string]corev1.PodTemplateSpec `json:"templatePool,omitempty"`

	// Templates maps an instance id (a non-negative integer, as a string) to the name of the
	// templatePool entry that instance runs.
	// +kubebuilder:validation:MaxProperties=100000
	// +kubebuilder:validation:XValidation:rule="self.all(id, id.matches('^(0|[1-9][0-9]{0,8})$'))",message="keys of templates must be instance ids: non-negative integers such as \"0\" or \"12\""
	// +optional
	Templates map[string]string `json:"templates,omitempty"`

	// DefaultTemplateName names the templatePool entry used by instances without an entry in
	// templates. When empty, spec.template is used.
	// +optional
	DefaultTemplateName string `json:"defaultTemplateName,omitempty"`

	// Statuses maps an instance id (a non-negative integer, as a string) to its desired status.
	// Killed stops that instance (its pod is deleted); removing the entry starts it again with
	// the same id, pod name and volumes.
	// +kubebuilder:validation:MaxProperties=100000
	// +kubebuilder:validation:XValidation:rule="self.all(id, id.matches('^(0|[1-9][0-9]{0,8})$'))",message="keys of statuses must be instance ids: non-negative integers such as \"0\" or \"12\""
	// +optional
	Statuses map[string]InstanceDesiredStatus `json:"statuses,omitempty"`

	// UpdateStrategy says how instances move to a changed template.
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy TAppUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a pod must be ready, without any container crashing, before
	// the instance counts as available during an update. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// ForceDeletePod lets the agent force-delete pods stuck terminating on a NotReady node, so
	// their instance can start elsewhere.
	// +optional
	ForceDeletePod bool `json:"forceDeletePod,omitempty"`

	// AutoDeleteUnusedTemplate prunes templatePool entries that no instance uses.
	// +optional
	AutoDeleteUnusedTemplate bool `json:"autoDeleteUnusedTemplate,omitempty"`

	// NeverMigrate keeps a finished (Succeeded or Failed) pod in place instead of re-creating it
	// according to its restart policy.
	// +optional
	NeverMigrate bool `json:"neverMigrate,omitempty"`

	// VolumeClaimTemplates are claims every instance gets: PVC <claim>-<tapp>-<id> is created
	// before the instance's pod and kept after the pod is gone.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ServiceName is the headless Service that governs the instances: each pod gets hostname
	// <pod name> and subdomain serviceName.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions of the templates (spec.template
	// and spec.templatePool) are kept for undo, besides the current and updated revisions.
	// Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=10
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// TAppUpdateStrategy says how instances move to a changed template.
type TAppUpdateStrategy struct {
	// Template names the templatePool entry being rolled out: instances on it are updated in
	// ascending id order within maxUnavailable. Instances on any other changed template are
	// force-updated within forceUpdate.maxUnavailable.
	// +optional
	Template string `json:"template,omitempty"`

	// MaxUnavailable is the most instances of the rolling template that may be unavailable
	// during an update: a positive integer, or a percentage of replicas from 1% to 100%.
	// Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^([1-9][0-9]?|100)%$')",message="maxUnavailable must be a positive integer or a percentage from 1% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// ForceUpdate limits the update of instances that are not on the rolling template.
	// +kubebuilder:default={}
	// +optional
	ForceUpdate ForceUpdateStrategy `json:"forceUpdate,omitempty"`

	// Partition keeps every instance whose id is below it on its current template, as a
	// StatefulSet's partition does. Defaults to 0 (update everything).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition *int32 `json:"partition,omitempty"`

	// Paused stops every further update; instances already updated stay updated.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// InPlaceUpdate tunes updates that change only images (and labels, annotations) or
	// container resources, which are done on the running pod instead of re-creating it.
	// +kubebuilder:default={}
	// +optional
	InPlaceUpdate InPlaceUpdateStrategy `json:"inPlaceUpdate,omitempty"`
}

// InPlaceUpdateStrategy tunes in-place updates.
// +kubebuilder:validation:XValidation:rule="!has(self.readinessGate) || self.readinessGate || !has(self.gracePeriodSeconds) || self.gracePeriodSeconds == 0",message="inPlaceUpdate.gracePeriodSeconds needs inPlaceUpdate.readinessGate true: without the gate nothing takes the pod out of its Services before the wait",fieldPath=".gracePeriodSeconds"
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is how long the agent waits between setting a pod's readiness gate
	// False (which takes it out of its Services' endpoints) and patching its images or
	// resources, so that connections can drain before a container restarts. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`

	// ReadinessGate gives new pods the apps.workload.dev/InPlaceUpdateReady readiness gate,
	// which the agent sets False for the length of an in-place update. With false, pods are
	// created without it and in-place updates write no condition: one agent write less per
	// created pod and two less per in-place update, at the cost of endpoint safety: the pod
	// leaves its Services' endpoints only once the kubelet has begun stopping the old container
	// and reported it not ready, so requests sent in that window fail, and gracePeriodSeconds
	// cannot be used. Pods created with the gate
	// keep it (readiness gates are immutable) and are still updated with it. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	ReadinessGate *bool `json:"readinessGate,omitempty"`
}

// InPlaceReadinessGate says whether new pods get the in-place readiness gate (default true).
func InPlaceReadinessGate(s *InPlaceUpdateStrategy) bool {
	return s.ReadinessGate == nil || *s.ReadinessGate
}

// ForceUpdateStrategy limits the update of instances that are not on the rolling template.
type ForceUpdateStrategy struct {
	// MaxUnavailable is the most force-updated instances that may be unavailable at once: a
	// positive integer, or a percentage of replicas from 1% to 100%. Defaults to 100%.
	// +kubebuilder:default="100%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^([1-9][0-9]?|100)%$')",message="forceUpdate.maxUnavailable must be a positive integer or a percentage from 1% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// TAppStatus is the state of a TApp as last observed by the agent.
type TAppStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of instances that have a pod.
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of instances whose pod is ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of instances ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdatedReplicas is the number of instances whose pod runs its desired template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// ScaleLabelSelector is the label selector of the pods, in string form, for the scale
	// subresource (kubectl scale and the HorizontalPodAutoscaler read it).
	// +optional
	ScaleLabelSelector string `json:"scaleLabelSelector,omitempty"`

	// AppStatus sums up all instances: Pending, Running, Failed, Succ or Killed.
	// +optional
	AppStatus AppStatus `json:"appStatus,omitempty"`

	// Statuses maps each instance id to its observed status: NotCreated, Pending, Running,
	// Updating, PodFailed, PodSucc, Killing, Killed, Failed, Succ or Unknown.
	// +optional
	Statuses map[string]InstanceStatus `json:"statuses,omitempty"`

	// Conditions are the latest observations of the TApp's state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CurrentRevision is the ControllerRevision every instance ran when the last update
	// finished.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the ControllerRevision of the current spec.template and
	// spec.templatePool.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CollisionCount counts hash collisions of revision names; it is mixed into the hash so the
	// next revision gets a free name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

// TAppList is a list of TApps.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type TAppList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of TApps.
	Items []TApp `json:"items"`
}
