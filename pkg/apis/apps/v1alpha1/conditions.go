package v1alpha1

// The meanings the agent writes and the plugin reads: condition types, condition and Event
// reasons, the finalizer and the annotations. They are declared here, once, so that the
// controllers (pkg/controller) and the plugin (pkg/workload, pkg/cmd) cannot drift apart.

// Condition types. TApp: Available, Progressing, ReplicaFailure. Canary: Progressing,
// Available, Degraded. UnitedDeployment: the UnitedDeploymentConditionType values.
const (
	// ConditionAvailable is True while enough instances (TApp: replicas − maxUnavailable;
	// Canary: stable and canary together reach replicas) are available.
	ConditionAvailable = "Available"
	// ConditionProgressing says whether pods are being brought to the spec (True), are there or
	// are held (False on a Canary that is paused, complete, rolled back or degraded; True with
	// reason RolloutComplete or False with RolloutPaused on a TApp).
	ConditionProgressing = "Progressing"
	// ConditionReplicaFailure (TApp) is True while the agent cannot create, delete or update
	// pods, or the spec is unusable (invalid selector, selector not matching a template,
	// missing template). It is absent otherwise.
	ConditionReplicaFailure = "ReplicaFailure"
	// ConditionDegraded (Canary) is True when the controller cannot act on the Canary (see the
	// reason).
	ConditionDegraded = "Degraded"
)

// Reasons shared by every kind.
const (
	ReasonSelectorMismatch = "SelectorMismatch"
	ReasonFailedCreate     = "FailedCreate"
	ReasonFailedDelete     = "FailedDelete"
	ReasonFailedUpdate     = "FailedUpdate"
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulUpdate = "SuccessfulUpdate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonRolloutComplete  = "RolloutComplete"
)

// TApp condition and Event reasons.
const (
	ReasonMinimumAvailable    = "MinimumInstancesAvailable"
	ReasonMinimumUnavailable  = "MinimumInstancesUnavailable"
	ReasonRolloutInProgress   = "RolloutInProgress"
	ReasonRolloutPaused       = "RolloutPaused"
	ReasonInvalidSelector     = "InvalidSelector"
	ReasonTemplateNotFound    = "TemplateNotFound"
	ReasonFailedStatusPatch   = "FailedStatusPatch"
	ReasonKilled              = "Killed"
	ReasonInPlaceUpdate       = "InPlaceUpdate"
	ReasonRecreate            = "Recreate"
	ReasonForceDelete         = "ForceDelete"
	ReasonTemplatePruned      = "TemplatePruned"
	ReasonFailedTemplatePrune = "FailedTemplatePrune"
)

// TAppSpecFailures are the ReplicaFailure reasons of a TApp that only a change of its spec can
// clear (the others are retried by the agent).
var TAppSpecFailures = map[string]bool{ReasonInvalidSelector: true, ReasonSelectorMismatch: true, ReasonTemplateNotFound: true}

// UnitedDeployment condition and Event reasons.
const (
	ReasonProvisioned          = "Provisioned"
	ReasonProvisionFailed      = "ProvisionFailed"
	ReasonReplacing            = "Replacing"
	ReasonUpdated              = "Updated"
	ReasonUpdating             = "Updating"
	ReasonPaused               = "Paused"
	ReasonPartitionUnsupported = "PartitionUnsupported"
	ReasonInvalidReplicas      = "InvalidReplicas"
	ReasonNoTemplate           = "NoTemplate"
	ReasonRevisionFailed       = "RevisionFailed"
	ReasonNoFailure            = "NoFailure"
	// ReasonClusterUnreachable: a subset's member cluster cannot be reached (no provider file,
	// no ClusterProfile, its control plane unhealthy, its API server not answering); its
	// workload is left as it is and its counts are the last seen.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonClusterUnsupported: a subset's member cluster cannot run the subset's kind (a TApp
	// where tapps.apps.workload.dev is not served).
	ReasonClusterUnsupported = "ClusterUnsupported"
)

// Canary condition reasons.
const (
	ReasonStableNotFound     = "StableNotFound"
	ReasonCanaryNameConflict = "CanaryNameConflict"
	ReasonInvalidSpec        = "InvalidSpec"
	// ReasonTemplateChangedAfterCompletion: spec.canary.template changed once the release had
	// completed; the agent does not roll it out without steps (docs/canary.md).
	ReasonTemplateChangedAfterCompletion = "TemplateChangedAfterCompletion"
	ReasonAsExpected                     = "AsExpected"
	// ReasonTargetNotFound: spec.targetRef names a workload that does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetHeld: another Canary releases spec.targetRef's workload already.
	ReasonTargetHeld = "TargetHeldByAnotherCanary"
	// ReasonTargetUnsupported: the target cannot be released by a partition as it is set up.
	ReasonTargetUnsupported = "TargetUnsupported"
	// ReasonDeploymentContested: another field manager keeps changing back what the agent sets on
	// a Deployment it does not own (a held target's spec.paused, the stable Deployment's
	// spec.replicas); the agent stopped writing it (docs/canary.md, "Beside another controller").
	ReasonDeploymentContested = "DeploymentContested"
	// ReasonAutoscaledDeployment: a HorizontalPodAutoscaler scales the Deployment whose replicas
	// the agent sets through the steps (the stable one of a pair, a Deployment target); it must
	// scale the Canary instead (docs/canary.md, "Autoscaling").
	ReasonAutoscaledDeployment = "AutoscaledDeployment"
	// ReasonHolding: the target is held, waiting for a template change to release.
	ReasonHolding             = "Holding"
	ReasonBatchUpgrading      = "BatchUpgrading"
	ReasonWaitingForPromotion = "WaitingForPromotion"
	ReasonPausedBySpec        = "PausedBySpec"
	ReasonCompleted           = "Completed"
	ReasonRollingBack         = "RollingBack"
	ReasonRolledBack          = "RolledBack"
	ReasonDegraded            = "Degraded"
	ReasonReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonBaking: a step's pods are available and its timed pause or analysis is under way.
	ReasonBaking = "Baking"
	// ReasonProgressDeadlineExceeded: a step did not become available within
	// spec.progressDeadlineSeconds (condition Progressing False; an abort reason).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonAnalysisFailed: a check failed and the release rolled back by itself (an abort reason).
	ReasonAnalysisFailed = "AnalysisFailed"
	// ReasonAnalysisInconclusive: a check could not decide; the release waits for a person.
	ReasonAnalysisInconclusive = "AnalysisInconclusive"
)

// Canary Event reasons.
const (
	EventCanaryCreated    = "CanaryDeploymentCreated"
	EventCanaryUpdated    = "CanaryTemplateUpdated"
	EventScaledCanary     = "ScaledCanary"
	EventScaledStable     = "ScaledStable"
	EventBatchStarted     = "BatchStarted"
	EventBatchCompleted   = "BatchCompleted"
	EventBatchPaused      = "BatchPaused"
	EventPromoted         = "Promoted"
	EventReleaseComplete  = "ReleaseCompleted"
	EventRestarted        = "ReleaseRestarted"
	EventRollingBack      = "RollingBack"
	EventRestoredStable   = "StableTemplateRestored"
	EventRolledBack       = "RolledBack"
	EventSnapshotMissing  = "StableSnapshotMissing"
	EventPauseEnded       = "PauseEnded"
	EventAnalysisPassed   = "AnalysisPassed"
	EventInconclusive     = "AnalysisInconclusive"
	EventDeadline         = "ProgressDeadlineExceeded"
	EventPartitionSet     = "PartitionSet"
	EventTemplateRestored = "TargetTemplateRestored"
	EventRetried          = "ReleaseRetried"
)

// FinalizerMemberWorkloads holds a deleted UnitedDeployment whose subsets name member clusters
// until the agent has deleted its subset workloads there: owner references cannot cross
// clusters, so the members' garbage collectors would never remove them.
const FinalizerMemberWorkloads = "apps.workload.dev/member-workloads"

// The Canary finalizer and annotations.
const (
	// FinalizerOrphanCanary holds a deleted Canary until the agent has removed its owner
	// reference from the canary Deployment, so that deleting a Canary never takes a Deployment
	// (and the traffic it serves) down with it.
	FinalizerOrphanCanary = "apps.workload.dev/orphan-canary-deployment"
	// AnnotationStableSnapshot, on a Canary, holds the stable Deployment as it was when the
	// release began (a JSON StableSnapshot). Rollback restores the stable pod template from it
	// if it changed since. The controller writes it once, before it creates the canary
	// Deployment, and never changes it afterwards.
	AnnotationStableSnapshot = "apps.workload.dev/stable-snapshot"
	// AnnotationTemplateHash, on a canary Deployment, is the hash of the Canary's
	// spec.canary.template and spec.minReadySeconds it was last written from. The controller
	// rewrites the Deployment's template when the hash no longer matches.
	AnnotationTemplateHash = "apps.workload.dev/canary-template-hash"
	// AnnotationSubsetHash, on a UnitedDeployment's subset workload, is the hash of its
	// subset's topology entry (nodeSelectorTerm and tolerations). The revision label tells
	// whether a workload carries the current spec.template; this annotation tells whether it
	// carries the current topology of its subset.
	AnnotationSubsetHash = "apps.workload.dev/subset-hash"
	// AnnotationDaemonSetPartition, on a DaemonSet a Canary holds (spec.targetRef), is the
	// number of its pods the agent keeps on the stable revision: a DaemonSet has no partition
	// of its own, and the plugin reads the step's from here.
	AnnotationDaemonSetPartition = "apps.workload.dev/daemonset-partition"
	// AnnotationDaemonSetUpdateStrategy, on a DaemonSet a Canary holds, is its
	// spec.updateStrategy (JSON) as it was before the hold, written back when the Canary lets
	// it go.
	AnnotationDaemonSetUpdateStrategy = "apps.workload.dev/daemonset-update-strategy"
	// AnnotationRetiredClusters, on a UnitedDeployment, lists (comma-separated ClusterProfile
	// namespace/name) the member clusters no subset names any more where the agent has not yet
	// seen its workloads gone: its status stops recording a cluster with the subset that named
	// it, and a member unreachable then would otherwise keep its workload for good. The agent
	// writes and clears it.
	AnnotationRetiredClusters = "apps.workload.dev/retired-clusters"
)
