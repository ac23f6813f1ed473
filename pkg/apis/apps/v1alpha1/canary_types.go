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
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
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
// +kubebuilder:validation:XValidation:rule="has(self.targetRef) ? !has(self.stableRef) && !has(self.canary) : has(self.stableRef) && has(self.canary)",message="set either targetRef (release a workload in place) or both stableRef and canary (release between two Deployments), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.stableRef) || !has(self.canary) || self.canary.name != self.stableRef.name",message="canary.name must differ from stableRef.name: the canary Deployment cannot be the stable one"
// +kubebuilder:validation:XValidation:rule="!has(self.targetRef) || !has(self.trafficRouting) || self.targetRef.kind == 'Deployment'",message="trafficRouting needs stableRef and canary, or targetRef of kind Deployment: a StatefulSet, TApp, UnitedDeployment or DaemonSet target updates its pods in place, so no Service can hold its canary pods apart from its stable ones"
// +kubebuilder:validation:XValidation:rule="has(self.targetRef) || has(self.replicas)",message="spec.replicas is required with stableRef and canary: it is the total the two Deployments serve (an autoscaler sets it through the Canary's scale subresource)"
// +kubebuilder:validation:XValidation:rule="has(self.replicas) || !has(self.batchSizes) || self.batchSizes.all(b, type(b) == string)",message="batchSizes must be percentages when spec.replicas is absent: the total follows targetRef's replicas, so a fixed number of pods could exceed it"
// +kubebuilder:validation:XValidation:rule="has(self.replicas) || !has(self.batchSizes) || self.batchSizes[self.batchSizes.size() - 1] == '100%'",message="the last of batchSizes must be \"100%\""
// +kubebuilder:validation:XValidation:rule="has(self.blueGreen) || [has(self.steps), has(self.batches), has(self.batchSizes)].filter(x, x).size() == 1",message="set exactly one of steps, batches or batchSizes"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || [has(self.steps), has(self.batches), has(self.batchSizes), has(self.maxSurge)].all(x, !x)",message="blueGreen cannot be set with steps, batches, batchSizes or maxSurge: a blue-green release brings the new version up at full size and switches at once"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.targetRef) || self.targetRef.kind == 'Deployment'",message="blueGreen needs stableRef and canary, or targetRef of kind Deployment: a StatefulSet, TApp, UnitedDeployment or DaemonSet target updates its pods in place, so its two versions never run side by side at full size"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.trafficRouting) || (self.blueGreen.activeService == self.trafficRouting.gatewayAPI.stableService && self.blueGreen.previewService == self.trafficRouting.gatewayAPI.canaryService)",message="with trafficRouting, blueGreen switches by the HTTPRoute's weights: blueGreen.activeService must be trafficRouting.gatewayAPI.stableService and blueGreen.previewService trafficRouting.gatewayAPI.canaryService"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.blueGreen.prePromotionAnalysis) || self.blueGreen.prePromotionAnalysis.all(n, has(self.analysis) && self.analysis.exists(a, a.name == n))",message="every name in blueGreen.prePromotionAnalysis must be the name of a check in spec.analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.blueGreen.postPromotionAnalysis) || self.blueGreen.postPromotionAnalysis.all(n, has(self.analysis) && self.analysis.exists(a, a.name == n))",message="every name in blueGreen.postPromotionAnalysis must be the name of a check in spec.analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.blueGreen.previewReplicas) || !has(self.replicas) || (self.replicas == 0 && has(self.targetRef)) || self.blueGreen.previewReplicas <= self.replicas",message="blueGreen.previewReplicas cannot be more than spec.replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.pauseType) || self.pauseType == 'First'",message="pauseType applies to batches and batchSizes only: with blueGreen, the preview waits for a promote, or for blueGreen.autoPromotionSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.pauseType == 'First'",message="pauseType applies to batches and batchSizes only: with steps, give each step its own pause"
// +kubebuilder:validation:XValidation:rule="!has(self.backgroundAnalysis) || (has(self.analysis) && self.backgroundAnalysis.analysis.all(n, self.analysis.exists(a, a.name == n)))",message="every name in backgroundAnalysis.analysis must be the name of an entry of spec.analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.analysis) || has(self.steps) || has(self.blueGreen)",message="analysis needs steps: a step names the checks that run while it bakes (steps[].analysis)"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.analysis) || s.analysis.all(n, has(self.analysis) && self.analysis.exists(a, a.name == n)))",message="every name in steps[].analysis must be the name of a check in spec.analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || !has(self.minReadySeconds) || self.progressDeadlineSeconds > self.minReadySeconds",message="progressDeadlineSeconds must be greater than minReadySeconds: a pod could never become available in time"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || !has(self.replicas) || self.steps.all(s, !has(s.replicas) || type(s.replicas) == string || s.replicas <= self.replicas)",message="steps[].replicas cannot be more than spec.replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, has(s.replicas) != has(s.subsets))",message="each step sets exactly one of replicas (a number or percentage of pods) or subsets (the zones of a UnitedDeployment target it releases)"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.subsets)) || (has(self.targetRef) && self.targetRef.kind == 'UnitedDeployment')",message="steps[].subsets releases zones of a UnitedDeployment and needs targetRef of kind UnitedDeployment: with other workloads give steps[].replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.batchSizes) || !has(self.replicas) || self.batchSizes.map(b, type(b) == int ? b : (int(b.substring(0, size(b) - 1)) * self.replicas + 50) / 100).isSorted()",message="batchSizes must not decrease: each batch holds at least as many canary pods as the one before"
// +kubebuilder:validation:XValidation:rule="!has(self.batchSizes) || !has(self.replicas) || (type(self.batchSizes[self.batchSizes.size() - 1]) == int ? self.batchSizes[self.batchSizes.size() - 1] == self.replicas : self.batchSizes[self.batchSizes.size() - 1] == '100%')",message="the last of batchSizes must be the full size: spec.replicas or \"100%\""
// +kubebuilder:validation:XValidation:rule="!has(self.batches) || !has(self.replicas) || self.batches <= self.replicas || self.replicas == 0",message="batches cannot be more than replicas: every batch must add at least one canary pod"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || !has(self.dynamicStableScale) || !self.dynamicStableScale",message="dynamicStableScale cannot be set with blueGreen: the old version stays at full size until blueGreen.scaleDownDelaySeconds after the switch, so that switching back is instant"
// +kubebuilder:validation:XValidation:rule="!has(self.dynamicStableScale) || !self.dynamicStableScale || has(self.trafficRouting)",message="dynamicStableScale needs trafficRouting: the stable Deployment shrinks as its traffic weight falls"
// +kubebuilder:validation:XValidation:rule="has(self.trafficRouting) || !has(self.steps) || self.steps.all(s, !has(s.weight))",message="steps[].weight needs trafficRouting: without it traffic follows the pod counts"
// +kubebuilder:validation:XValidation:rule="has(self.trafficRouting) || !has(self.steps) || self.steps.all(s, !has(s.matches))",message="steps[].matches needs trafficRouting: header routes are set on its HTTPRoute"
// +kubebuilder:validation:XValidation:rule="!has(self.trafficRouting) || self.trafficRouting.gatewayAPI.stableService != self.trafficRouting.gatewayAPI.canaryService",message="trafficRouting.gatewayAPI.canaryService must differ from stableService"
type CanarySpec struct {
	// Replicas is the number of pods serving across the stable and the canary Deployment (the
	// total). Available capacity never drops below it during the release or a rollback, and the
	// steps' percentages are shares of it, recomputed whenever it changes: an autoscaler sets it
	// through the Canary's scale subresource. Required with stableRef and canary; with a
	// targetRef, leave it out (or 0) to follow the target's own replicas, read at every sync
	// (a Deployment target: between releases; a release shares out the count recorded in
	// status.releaseReplicas when it started) (docs/canary.md, "Autoscaling").
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// StableRef names the Deployment serving today, in the Canary's namespace. Set it with
	// canary, or set targetRef instead.
	// +optional
	StableRef StableRef `json:"stableRef,omitzero"`

	// Canary is the Deployment being released. Set it with stableRef, or set targetRef instead.
	// +optional
	Canary CanaryTarget `json:"canary,omitzero"`

	// TargetRef names a workload released in place instead of between two Deployments: the
	// Canary holds it (its partition at spec.replicas; a DaemonSet: updateStrategy OnDelete) so
	// that a change of its pod template updates no pod, then releases the new revision through the
	// steps by lowering the partition (a DaemonSet: by deleting its old pods, within its
	// maxUnavailable) (docs/canary-targets.md). Set it instead of stableRef and canary.
	// +optional
	TargetRef *CanaryTargetRef `json:"targetRef,omitempty"`

	// Steps is the release, step by step: each step sets the canary pods, then bakes (a pause,
	// analysis) before the next begins. A release always ends with every replica on the canary:
	// when the last step holds fewer, a final step of 100% without pause follows it. Set exactly
	// one of steps, batches and batchSizes; batches and batchSizes are shorthands for steps
	// (see docs/canary.md).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Steps []CanaryStep `json:"steps,omitempty"`

	// MaxSurge is how many pods above spec.replicas the stable and canary Deployments may run
	// together during the release (an integer, or a percentage of replicas rounded up). A step
	// larger than that is reached in sub-steps. Defaults to 25%; it must allow at least one pod,
	// since available capacity never drops below spec.replicas. Not with blueGreen, whose peak is
	// twice spec.replicas by nature.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="maxSurge must be a positive integer or a percentage from 1% to 100%: with no surge a release could not start without dropping below spec.replicas"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// ProgressDeadlineSeconds is how long a step may take for its canary pods (and the stable
	// pods it keeps) to become available. Past it the Canary is Degraded (condition Progressing
	// False, reason ProgressDeadlineExceeded). Pauses and analysis do not count. Defaults to 600.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=600
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// ProgressDeadlineAbort, when true, rolls the release back by itself once the progress
	// deadline is exceeded, as a failed analysis does.
	// +optional
	ProgressDeadlineAbort bool `json:"progressDeadlineAbort,omitempty"`

	// Analysis lists the checks that steps may name: each measures the canary while a step bakes
	// and decides it passes, fails (the release rolls back by itself) or is inconclusive (the
	// release pauses for a person). See docs/analysis.md.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Analysis []AnalysisCheck `json:"analysis,omitempty"`

	// BackgroundAnalysis names entries of spec.analysis that run from a step to the end of the
	// release, beside the steps' own checks: between steps too, failing the release at any
	// moment. See docs/analysis.md.
	// +optional
	BackgroundAnalysis *CanaryBackgroundAnalysis `json:"backgroundAnalysis,omitempty"`

	// Retries counts the times the release was started again after it was aborted (by a person
	// or by itself). Raising it (kubectl workload retry) starts an aborted release again from
	// step 1; the agent ignores it otherwise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	Retries int32 `json:"retries,omitempty"`

	// Batches is the number of batches: batch 1 is one pod, later batches grow evenly, and the
	// last holds every replica. A shorthand for steps; set exactly one of steps, batches and
	// batchSizes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Batches *int32 `json:"batches,omitempty"`

	// BatchSizes lists the canary pods of each batch: integers, or percentages of replicas
	// (rounded half up). They must not decrease and the last must be the full size. A shorthand
	// for steps; set exactly one of steps, batches and batchSizes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XIntOrString
	// +kubebuilder:validation:items:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="self.all(b, type(b) == int ? b > 0 : b.matches('^([1-9][0-9]?|100)%$'))",message="each of batchSizes must be a positive integer or a percentage from 1% to 100%"
	// +optional
	BatchSizes []intstr.IntOrString `json:"batchSizes,omitempty"`

	// PauseType says after which batches the release waits for promotion: First (after batch 1
	// only, the default), All (after every batch but the last) or None. It applies to batches
	// and batchSizes only; steps carry their own pauses.
	// +kubebuilder:default=First
	// +optional
	PauseType PauseType `json:"pauseType,omitempty"`

	// Paused holds the release where it is, whatever pauseType says, until set back to false.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ApprovedBatch is the highest step (batch) a person approved to proceed past its pause or
	// the rest of a timed pause, and an inconclusive analysis. Promote
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

	// TrafficRouting moves traffic by weight through an HTTPRoute (docs/traffic.md).
	// +optional
	TrafficRouting *CanaryTrafficRouting `json:"trafficRouting,omitempty"`

	// BlueGreen releases the new version beside the old one at full size and switches every
	// request to it at once, instead of steps (docs/canary.md, "Blue-green"). Set it instead of
	// steps, batches and batchSizes.
	// +optional
	BlueGreen *CanaryBlueGreen `json:"blueGreen,omitempty"`

	// DynamicStableScale, with trafficRouting, shrinks the stable Deployment as its weight falls
	// (never below what its weight needs) instead of only as canary pods become available.
	// +optional
	DynamicStableScale bool `json:"dynamicStableScale,omitempty"`
}

// CanaryStep is one step of a release.
type CanaryStep struct {
	// Replicas is the number of canary pods the step holds: an integer, or a percentage of
	// spec.replicas rounded half up. The stable Deployment holds the rest. Set it or subsets.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="replicas must be a number of pods (0 or more) or a percentage from 0% to 100%"
	// +optional
	Replicas intstr.IntOrString `json:"replicas,omitzero"`

	// Subsets, with a UnitedDeployment targetRef instead of replicas, names the subsets (zones)
	// the step releases: every pod of these and of the subsets named by earlier steps runs the
	// new revision, no pod of the others does. A release whose last step leaves subsets out ends
	// with a step of every pod.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Subsets []string `json:"subsets,omitempty"`

	// Pause, once the step's pods are available, waits: {} until a promote, {duration: 10m}
	// for that long (a promote skips what is left). Without it the release goes on as soon as
	// the step's analysis passes.
	// +optional
	Pause *CanaryPause `json:"pause,omitempty"`

	// Analysis names checks of spec.analysis to run while the step bakes (from the moment its
	// pods are available until its pause ends); the next step waits for all of them to pass.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Analysis []string `json:"analysis,omitempty"`

	// Weight is the canary's share of traffic (0–100) during the step; without it the share
	// follows the ready canary pods. Needs trafficRouting.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`

	// Matches are headers that send a request to the canary whatever the weights, during the
	// step (all must match). Needs trafficRouting.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Matches []CanaryHeaderMatch `json:"matches,omitempty"`
}

// CanaryPause is a step's wait.
type CanaryPause struct {
	// Duration is how long to wait, e.g. "10m" (at least 1s). Without it the wait lasts until
	// a promote.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="pause.duration must be at least 1s"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// StableRef names the stable Deployment.
type StableRef struct {
	// Name of the stable Deployment: a Deployment name (DNS-1123 subdomain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="stableRef.name must be a valid Deployment name (DNS-1123 subdomain): lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name"`
}

// CanaryTargetRef names the workload a Canary releases in place.
type CanaryTargetRef struct {
	// Kind of the workload, in the Canary's namespace: StatefulSet (apps/v1), UnitedDeployment
	// or TApp (apps.workload.dev/v1alpha1), released in place through their partitions;
	// DaemonSet (apps/v1), held with updateStrategy OnDelete while the agent deletes its old pods
	// per step; or Deployment (apps/v1), held paused while a temporary canary Deployment carries
	// its new template through the steps.
	// +kubebuilder:validation:Enum=StatefulSet;UnitedDeployment;TApp;Deployment;DaemonSet
	Kind string `json:"kind"`

	// Name of the workload (DNS-1123 subdomain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="targetRef.name must be a valid workload name (DNS-1123 subdomain): lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
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
	// BatchBaking: the step's pods are available; a timed pause or its analysis is under way.
	BatchBaking BatchState = "Baking"
	// BatchRolledBack: the step was under way (upgrading, baking or paused) when the release
	// rolled back (spec.rollback or an abort): it ended there, in every release mode.
	BatchRolledBack BatchState = "RolledBack"
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

	// Replicas is the number of pods the release runs now, of either template (the scale
	// subresource's status.replicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReleaseReplicas is, with a Deployment targetRef, the total the release under way shares
	// out: spec.replicas, or without it the Deployment's replicas when the release started (the
	// agent scales that Deployment down as the canary grows, so they cannot give the total
	// during it). 0 between releases.
	// +optional
	ReleaseReplicas int32 `json:"releaseReplicas,omitempty"`

	// Selector is the label selector of the pods of the release, of either template, in the
	// string form of kubectl's --selector (the scale subresource's status.selector): an
	// autoscaler measures these pods.
	// +optional
	Selector string `json:"selector,omitempty"`

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

	// BlueGreen says where the Services of spec.blueGreen point; nil without it.
	// +optional
	BlueGreen *CanaryBlueGreenStatus `json:"blueGreen,omitempty"`

	// Analysis is the state of the current step's checks: the last measurements and verdicts.
	// Templates expand to several checks each, so a step may run more checks than
	// spec.analysis has entries, up to MaxStepChecks.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Analysis []AnalysisCheckStatus `json:"analysis,omitempty"`

	// BackgroundAnalysis is the state of spec.backgroundAnalysis's checks in this release.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	BackgroundAnalysis []AnalysisCheckStatus `json:"backgroundAnalysis,omitempty"`

	// Abort says why the release rolled back by itself (a failed check, an exceeded progress
	// deadline). It stays until spec.retries rises above its retries (kubectl workload retry).
	// +optional
	Abort *CanaryAbort `json:"abort,omitempty"`

	// TrafficRouting is what the agent set on the HTTPRoute of spec.trafficRouting.
	// +optional
	TrafficRouting *CanaryTrafficStatus `json:"trafficRouting,omitempty"`

	// Target is the state of spec.targetRef's workload as the agent last saw it.
	// +optional
	Target *CanaryTargetStatus `json:"target,omitempty"`

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
	// State of the batch: Pending, Upgrading (pods being made available), Baking (a timed
	// pause or analysis under way), Paused (waiting for a person: a pause without duration or
	// an inconclusive analysis), Completed, or RolledBack (the step under way when the release
	// rolled back).
	// +kubebuilder:validation:Enum=Pending;Upgrading;Baking;Paused;Completed;RolledBack
	State BatchState `json:"state"`
	// PauseEndTime is when the step's timed pause ends (a promote ends it sooner).
	// +optional
	PauseEndTime *metav1.Time `json:"pauseEndTime,omitempty"`
	// StartTime is when the batch began.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// FinishTime is when every pod of the batch became available.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`
}

// CanaryTargetStatus is the state of a Canary's target workload.
type CanaryTargetStatus struct {
	// StableRevision is the revision the target's pods ran before the release (a StatefulSet's
	// status.currentRevision): what an abort returns them to.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// UpdateRevision is the revision being released (a StatefulSet's status.updateRevision);
	// equal to stableRevision when there is nothing to release.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Partition is the target's partition as the agent set it: pods with an ordinal at or above
	// it run the update revision (a DaemonSet: the number of its pods the agent keeps on the
	// stable revision).
	Partition int32 `json:"partition"`
	// UpdatedReplicas is the number of the target's pods on the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// AvailableReplicas is the number of the target's available pods, of either revision.
	AvailableReplicas int32 `json:"availableReplicas"`
	// AbortedRevision is the revision the last abort rolled back: a retry (spec.retries raised
	// above abortedRetries) writes its template to the target again and releases it from step 1.
	// +optional
	AbortedRevision string `json:"abortedRevision,omitempty"`
	// AbortedRetries is spec.retries when abortedRevision was rolled back.
	// +optional
	AbortedRetries int32 `json:"abortedRetries,omitempty"`
}

// CanaryAbort records why a release rolled back by itself.
type CanaryAbort struct {
	// Reason is AnalysisFailed or ProgressDeadlineExceeded.
	Reason string `json:"reason"`
	// Message says what happened in words: the check, its measured values and its condition,
	// or the step that did not become available in time.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Message string `json:"message,omitempty"`
	// Step is the 1-based step at which the release was aborted.
	Step int32 `json:"step"`
	// Check is the name of the failed check, if a check failed.
	// +optional
	Check string `json:"check,omitempty"`
	// Retries is spec.retries when the release was aborted: the abort holds while they are equal.
	Retries int32 `json:"retries"`
	// Time is when the release was aborted.
	Time metav1.Time `json:"time"`
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

// CanaryBackgroundAnalysis runs checks from a step to the end of the release.
type CanaryBackgroundAnalysis struct {
	// Analysis names entries of spec.analysis (inline checks or templates).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Analysis []string `json:"analysis"`

	// StartingStep is the 1-based step at whose start the checks begin. Defaults to 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StartingStep *int32 `json:"startingStep,omitempty"`
}
