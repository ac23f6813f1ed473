package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CanaryBlueGreen releases the new version beside the old one at full size and switches every
// request to it at once (docs/canary.md, "Blue-green"): the new pods are brought up behind
// previewService while activeService keeps selecting the stable pods; the switch (after the
// pre-promotion checks and a promotion) changes the selector of activeService from the stable
// pods to the new ones; the old pods stay up scaleDownDelaySeconds after the switch (and after
// the post-promotion checks), so that a failure switches back at once.
//
// +kubebuilder:validation:XValidation:rule="self.activeService != self.previewService",message="blueGreen.previewService must differ from blueGreen.activeService: the preview is reached apart from the live traffic"
type CanaryBlueGreen struct {
	// ActiveService names the Service of the live traffic, in the Canary's namespace: the agent
	// adds the key apps.workload.dev/bluegreen to its selector, selecting the stable pods until
	// the switch and the new ones after it. With trafficRouting it is the route's stableService,
	// whose selector the agent leaves alone: the route's weights switch instead.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="blueGreen.activeService must be a valid Service name (DNS-1035 label)"
	// +required
	ActiveService string `json:"activeService"`

	// PreviewService names the Service that selects the new pods before the switch (and the
	// active ones after it), in the Canary's namespace. With trafficRouting it is the route's
	// canaryService, selecting the new pods by the user's own labels.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="blueGreen.previewService must be a valid Service name (DNS-1035 label)"
	// +required
	PreviewService string `json:"previewService"`

	// PreviewReplicas brings the new version up with this many pods first, for the preview; it
	// grows to spec.replicas once promoted, before the switch. Defaults to spec.replicas.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PreviewReplicas *int32 `json:"previewReplicas,omitempty"`

	// AutoPromotionSeconds promotes by itself this long after the preview's pods are available
	// (and its pre-promotion checks passed); without it the release waits, Paused, for a
	// promote.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AutoPromotionSeconds *int32 `json:"autoPromotionSeconds,omitempty"`

	// ScaleDownDelaySeconds keeps the old pods up this long after the switch (and the
	// post-promotion checks) before they are scaled down. Defaults to 30.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	// +optional
	ScaleDownDelaySeconds *int32 `json:"scaleDownDelaySeconds,omitempty"`

	// PrePromotionAnalysis names entries of spec.analysis that measure the preview before the
	// switch: a failure aborts the release, which never switches.
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +optional
	PrePromotionAnalysis []string `json:"prePromotionAnalysis,omitempty"`

	// PostPromotionAnalysis names entries of spec.analysis that measure the new version after
	// the switch: a failure switches back to the old pods, still up, at once.
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +optional
	PostPromotionAnalysis []string `json:"postPromotionAnalysis,omitempty"`
}

// DefaultScaleDownDelaySeconds is spec.blueGreen.scaleDownDelaySeconds when unset.
const DefaultScaleDownDelaySeconds = 30

// LabelBlueGreen is the label a blue-green release adds to the pods of each side, and the only
// key it writes in the selectors of its Services: its value tells the two sides apart.
const LabelBlueGreen = "apps.workload.dev/bluegreen"

// CanaryBlueGreenStatus is where the two Services of spec.blueGreen point.
type CanaryBlueGreenStatus struct {
	// Active names the Deployment whose pods activeService selects ("" before the release
	// pinned it): the value of its label apps.workload.dev/bluegreen.
	// +optional
	Active string `json:"active,omitempty"`
	// Preview names the Deployment whose pods previewService selects.
	// +optional
	Preview string `json:"preview,omitempty"`
	// ScaleDownTime is when the old pods are scaled down, once the switch and its checks are
	// done; unset before.
	// +optional
	ScaleDownTime *metav1.Time `json:"scaleDownTime,omitempty"`
}

// Reasons of a blue-green release's Events and conditions.
const (
	// EventServiceSwitched: the agent set the bluegreen key of a Service's selector.
	EventServiceSwitched = "ServiceSwitched"
	// EventStableLabeled: the agent added label apps.workload.dev/bluegreen to the stable pod
	// template, which rolls its pods once.
	EventStableLabeled = "StableLabeled"
)
