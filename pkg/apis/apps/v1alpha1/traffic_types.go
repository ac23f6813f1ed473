package v1alpha1

// CanaryTrafficRouting moves traffic between the stable and the canary pods independently of
// their counts (docs/traffic.md).
type CanaryTrafficRouting struct {
	// GatewayAPI routes through a gateway.networking.k8s.io/v1 HTTPRoute.
	GatewayAPI GatewayAPITrafficRouting `json:"gatewayAPI"`
}

// GatewayAPITrafficRouting names the HTTPRoute whose backendRef weights the agent sets and the
// two Services, in the Canary's namespace, that the route sends traffic to.
type GatewayAPITrafficRouting struct {
	// HTTPRoute is the name of the HTTPRoute. Every rule of it that sends to both Services gets
	// their weights; the agent never creates or deletes the route.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="trafficRouting.gatewayAPI.httpRoute must be a valid HTTPRoute name (DNS-1123 subdomain)"
	HTTPRoute string `json:"httpRoute"`

	// StableService is the Service selecting the stable Deployment's pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="trafficRouting.gatewayAPI.stableService must be a valid Service name (DNS-1035 label)"
	StableService string `json:"stableService"`

	// CanaryService is the Service selecting the canary Deployment's pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="trafficRouting.gatewayAPI.canaryService must be a valid Service name (DNS-1035 label)"
	CanaryService string `json:"canaryService"`
}

// HeaderMatchType is how a header's value is compared, as in the Gateway API.
// +kubebuilder:validation:Enum=Exact;RegularExpression
type HeaderMatchType string

const (
	// HeaderMatchExact matches the value exactly.
	HeaderMatchExact HeaderMatchType = "Exact"
	// HeaderMatchRegularExpression matches the value with a regular expression.
	HeaderMatchRegularExpression HeaderMatchType = "RegularExpression"
)

// CanaryHeaderMatch is one header a request must carry to be sent to the canary only, like the
// Gateway API's HTTPHeaderMatch.
type CanaryHeaderMatch struct {
	// Type is Exact (the default) or RegularExpression.
	// +kubebuilder:default=Exact
	// +optional
	Type HeaderMatchType `json:"type,omitempty"`

	// Name is the header's name (case-insensitive, as HTTP header names are).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$`
	Name string `json:"name"`

	// Value is the value to match.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// CanaryTrafficStatus is what the agent last set on the HTTPRoute.
type CanaryTrafficStatus struct {
	// DesiredWeight is the canary's weight (0–100) the current step asks for.
	// +optional
	DesiredWeight int32 `json:"desiredWeight"`

	// ActualWeight is the canary's weight the HTTPRoute carries, as last observed.
	// +optional
	ActualWeight int32 `json:"actualWeight"`

	// HeaderRoute is true while the HTTPRoute holds the rule that sends requests matching
	// HeaderMatches to the canary only.
	// +optional
	HeaderRoute bool `json:"headerRoute,omitempty"`

	// HeaderMatches are the headers of that rule.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	HeaderMatches []CanaryHeaderMatch `json:"headerMatches,omitempty"`

	// HTTPRouteGeneration is the HTTPRoute's metadata.generation as last observed.
	// +optional
	HTTPRouteGeneration int64 `json:"httpRouteGeneration,omitempty"`

	// HTTPRouteResourceVersion is the HTTPRoute's metadata.resourceVersion as last observed.
	// +optional
	HTTPRouteResourceVersion string `json:"httpRouteResourceVersion,omitempty"`
}

// The Canary's traffic routing condition and its reasons (docs/traffic.md).
const (
	// ConditionTrafficRoutingReady is True while the HTTPRoute and both Services are as the
	// agent needs them; False (with one of the reasons below) holds every write of the release.
	ConditionTrafficRoutingReady = "TrafficRoutingReady"

	ReasonTrafficReady          = "Ready"
	ReasonGatewayAPIUnavailable = "GatewayAPIUnavailable"
	ReasonHTTPRouteNotFound     = "HTTPRouteNotFound"
	ReasonHTTPRouteInvalid      = "HTTPRouteInvalid"
	ReasonServiceNotFound       = "ServiceNotFound"
	ReasonServiceSelector       = "ServiceSelectorMismatch"
	// ReasonServiceManagedElsewhere: a Service carries Argo Rollouts' managed-by annotation: that
	// controller sets its selector to its own ReplicaSets' pods.
	ReasonServiceManagedElsewhere = "ServiceManagedByAnotherController"
	ReasonHTTPRouteWriteFailed    = "HTTPRouteWriteFailed"
	// ReasonHTTPRouteContested: another field manager keeps changing back the weights the agent
	// sets (docs/traffic.md, "Another controller on the route"); the agent stopped writing them.
	ReasonHTTPRouteContested = "HTTPRouteContested"

	// EventTrafficShifted: the agent patched the HTTPRoute. EventHTTPRouteChanged: someone else
	// changed the route between the agent's read and its write; it reads it again.
	EventTrafficShifted   = "TrafficShifted"
	EventHTTPRouteChanged = "HTTPRouteChanged"
	// EventEndpointsLagging: a blue-green switch-back moved the route to the stable Service
	// before its EndpointSlices listed every stable pod ready, having waited the most it waits.
	EventEndpointsLagging = "EndpointsLagging"
)
