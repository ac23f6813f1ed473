package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnalysisCheck is one named check run while a release step bakes (spec.analysis[] of a
// Canary): a provider measures, the conditions judge each measurement, and the limits turn
// the measurements into a verdict. See docs/analysis.md.
//
// +kubebuilder:validation:XValidation:rule="has(self.provider) != has(self.templateRef)",message="set provider (an inline check) or templateRef (the checks of a template), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.templateRef) || !(has(self.interval) || has(self.count) || has(self.failureLimit) || has(self.inconclusiveLimit) || has(self.consecutiveErrorLimit) || has(self.successCondition) || has(self.failureCondition))",message="an entry with templateRef sets only name, templateRef and args: the template's checks say the rest"
// +kubebuilder:validation:XValidation:rule="!has(self.args) || has(self.templateRef)",message="args needs templateRef: they are the values of the template's arguments"
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || !(has(self.provider.prometheus) || has(self.provider.web)) || has(self.successCondition) || has(self.failureCondition)",message="a prometheus or web check needs successCondition or failureCondition: nothing else says what a good value is"
// +kubebuilder:validation:XValidation:rule="!has(self.count) || self.count == 1 || has(self.interval)",message="count above 1 needs interval: the time between measurements"
type AnalysisCheck struct {
	// Name identifies the check; steps list checks by it and status reports by it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Interval is the time between measurements, e.g. "30s" (at least 1s). Without it the check
	// measures once.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Count is the number of measurements after which the check is decided. Defaults to 1
	// without an interval; with an interval and no count the check keeps measuring for as long
	// as the step bakes and passes when the step ends without failing.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Count *int32 `json:"count,omitempty"`

	// FailureLimit is the number of failed measurements tolerated: one more fails the check.
	// Defaults to 0 (the first failed measurement fails the check).
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// InconclusiveLimit is the number of inconclusive measurements tolerated: one more makes
	// the check Inconclusive, which pauses the release for a person. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InconclusiveLimit int32 `json:"inconclusiveLimit,omitempty"`

	// ConsecutiveErrorLimit is the number of provider errors in a row (an unreachable
	// Prometheus, a Job that cannot be created) that are retried at the interval; one more
	// counts as an inconclusive measurement. Defaults to 4.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`

	// SuccessCondition is a CEL expression over `result` (the measured value) that is true
	// when the measurement is good, e.g. "result < 0.01" or "result[0] < 0.01" for a vector.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	SuccessCondition string `json:"successCondition,omitempty"`

	// FailureCondition is a CEL expression over `result` that is true when the measurement is
	// bad. With both conditions set, a measurement matching neither is inconclusive.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// Provider says where measurements come from: exactly one of prometheus, job, podHealth.
	// Every inline check sets it; an entry with templateRef does not.
	// +optional
	Provider AnalysisProvider `json:"provider,omitzero"`

	// TemplateRef makes this entry of a Canary's spec.analysis run every check of a template
	// instead of one inline check; a step naming the entry runs them all.
	// +optional
	TemplateRef *AnalysisTemplateRef `json:"templateRef,omitempty"`

	// Args are the values of the template's arguments, written {{args.NAME}} in its checks.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Args []AnalysisArgValue `json:"args,omitempty"`
}

// AnalysisTemplateRef names the template an entry of spec.analysis runs.
type AnalysisTemplateRef struct {
	// Kind is AnalysisTemplate (in the Canary's namespace) or ClusterAnalysisTemplate.
	// +kubebuilder:validation:Enum=AnalysisTemplate;ClusterAnalysisTemplate
	Kind string `json:"kind"`
	// Name is the template's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Kinds of template an entry may refer to.
const (
	KindAnalysisTemplate        = "AnalysisTemplate"
	KindClusterAnalysisTemplate = "ClusterAnalysisTemplate"
)

// AnalysisArgValue gives one argument of a template its value: a literal or a field of the
// Canary.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="set value or valueFrom, not both"
type AnalysisArgValue struct {
	// Name is the argument's name in the template's spec.args.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`
	// Value is the literal value.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value *string `json:"value,omitempty"`
	// ValueFrom takes the value from a field of the Canary.
	// +optional
	ValueFrom *AnalysisArgSource `json:"valueFrom,omitempty"`
}

// AnalysisArgSource is where an argument's value comes from.
type AnalysisArgSource struct {
	// FieldPath is the Canary's field: metadata.name, metadata.namespace, spec.canary.name and
	// spec.stableRef.name (the canary and stable Deployments), status.target.stableRevision
	// and status.target.updateRevision (a target's revisions). A field that is empty leaves
	// the argument unset, and the release waits until it is set.
	// +kubebuilder:validation:Enum=metadata.name;metadata.namespace;spec.canary.name;spec.stableRef.name;status.target.stableRevision;status.target.updateRevision
	FieldPath string `json:"fieldPath"`
}

// AnalysisProvider is where a check's measurements come from.
//
// +kubebuilder:validation:XValidation:rule="[has(self.prometheus), has(self.job), has(self.podHealth), has(self.web)].filter(p, p).size() == 1",message="provider must set exactly one of prometheus, job, podHealth, web"
type AnalysisProvider struct {
	// Prometheus queries a Prometheus server's HTTP API; result is the query's value.
	// +optional
	Prometheus *PrometheusProvider `json:"prometheus,omitempty"`

	// Job runs a Job per measurement; result is true when the Job succeeded and false when it
	// failed.
	// +optional
	Job *JobProvider `json:"job,omitempty"`

	// PodHealth looks at the canary's own pods: their restarts and readiness.
	// +optional
	PodHealth *PodHealthProvider `json:"podHealth,omitempty"`

	// Web asks an HTTP endpoint; result is its decoded JSON body.
	// +optional
	Web *WebProvider `json:"web,omitempty"`
}

// WebProvider sends one HTTP request per measurement. A response other than 2xx, a body that is
// not JSON or a timeout is an error measurement (retried, then inconclusive, never a pass). TLS
// certificates are verified. The agent sends the request from its own pod: whoever writes the
// check chooses where it goes (docs/analysis.md, "Who may write templates").
//
// +kubebuilder:validation:XValidation:rule="!has(self.body) || self.method == 'POST'",message="body needs method POST"
type WebProvider struct {
	// URL is an http or https URL; {{args.NAME}} is percent-encoded for where it stands.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must be an http or https URL"
	URL string `json:"url"`

	// Method is GET (the default) or POST.
	// +kubebuilder:validation:Enum=GET;POST
	// +kubebuilder:default=GET
	// +optional
	Method string `json:"method,omitempty"`

	// Headers are sent with the request, e.g. an Authorization header from a Secret.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Headers []WebHeader `json:"headers,omitempty"`

	// Body is sent with a POST, as application/json.
	// +kubebuilder:validation:MaxLength=8192
	// +optional
	Body string `json:"body,omitempty"`

	// TimeoutSeconds bounds one request, from 1 to 60. Defaults to 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// WebHeader is one request header, its value literal or from a Secret of the Canary's
// namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="set value or valueFrom, not both"
type WebHeader struct {
	// Name is the header's name, e.g. Authorization.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Name string `json:"name"`
	// Value is the literal value.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value *string `json:"value,omitempty"`
	// ValueFrom reads the value from a Secret.
	// +optional
	ValueFrom *SecretValueSource `json:"valueFrom,omitempty"`
}

// SecretValueSource reads a value from a key of a Secret in the Canary's namespace. The agent
// reads only the Secrets checks name, when they measure.
type SecretValueSource struct {
	// SecretKeyRef names the Secret and the key.
	SecretKeyRef SecretKeyRef `json:"secretKeyRef"`
}

// SecretKeyRef is a key of a Secret in the Canary's namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key is the key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PrometheusProvider queries a Prometheus server. A scalar result is a number; an instant
// vector is a list of numbers (one per series, in the order Prometheus returns them; empty
// when nothing matched).
type PrometheusProvider struct {
	// Address is the server's base URL, e.g. "http://prometheus.monitoring:9090".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'http' || url(self).getScheme() == 'https')",message="address must be an http or https URL"
	Address string `json:"address"`

	// Query is the PromQL instant query, evaluated at the time of each measurement.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	Query string `json:"query"`

	// Auth authenticates each query: a bearer token or basic auth, from Secrets of the
	// Canary's namespace.
	// +optional
	Auth *PrometheusAuth `json:"auth,omitempty"`

	// Headers are sent with each query, e.g. X-Scope-OrgID, the tenant of a Mimir, Cortex or
	// Thanos behind one address.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Headers []WebHeader `json:"headers,omitempty"`

	// TLS says how to verify an https server: the CA that signed its certificate and the name
	// to expect in it. Certificates are always verified.
	// +optional
	TLS *TLSSettings `json:"tls,omitempty"`
}

// PrometheusAuth is how a check authenticates to Prometheus: exactly one of bearerToken, basic.
//
// +kubebuilder:validation:XValidation:rule="has(self.bearerToken) != has(self.basic)",message="auth must set exactly one of bearerToken, basic"
type PrometheusAuth struct {
	// BearerToken is sent as "Authorization: Bearer <token>".
	// +optional
	BearerToken *SecretValueSource `json:"bearerToken,omitempty"`
	// Basic is HTTP basic authentication.
	// +optional
	Basic *BasicAuth `json:"basic,omitempty"`
}

// BasicAuth is a user name and a password from a Secret.
type BasicAuth struct {
	// Username is the user name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Username string `json:"username"`
	// Password is read from a Secret of the Canary's namespace.
	Password SecretValueSource `json:"password"`
}

// TLSSettings verify an https server other than against the agent's system roots.
type TLSSettings struct {
	// CA is a PEM bundle of the certificate authorities to trust instead of the system's,
	// read from a Secret (or any key of one) of the Canary's namespace.
	// +optional
	CA *SecretValueSource `json:"ca,omitempty"`
	// ServerName is the name the server's certificate must carry, when it is not the
	// address's host.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServerName string `json:"serverName,omitempty"`
}

// JobProvider runs a Job per measurement in the release's namespace, owned by the release so
// that deleting the release deletes its Jobs. The Job's success passes the measurement.
type JobProvider struct {
	// Template is the Job to run. Its pods should not restart for ever: set the pod's
	// restartPolicy to Never or OnFailure and, if needed, the Job's backoffLimit.
	Template batchv1.JobTemplateSpec `json:"template"`
}

// PodHealthProvider measures the canary's pods. Without conditions, a measurement fails when
// any pod restarted more than maxRestarts times or more than maxNotReady pods are not ready.
// With conditions, result is a map of the counts: pods, ready, notReady, restarts (the most
// restarts of any one pod) and totalRestarts.
type PodHealthProvider struct {
	// MaxRestarts is the most container restarts a canary pod may have had. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRestarts int32 `json:"maxRestarts,omitempty"`

	// MaxNotReady is the most canary pods that may be not ready at a measurement (pods still
	// starting count as not ready; use failureLimit to tolerate a slow start). Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxNotReady int32 `json:"maxNotReady,omitempty"`
}

// AnalysisPhase is the state of a check, or the verdict on one measurement.
// +kubebuilder:validation:Enum=Running;Successful;Failed;Inconclusive;Error;Stopped
type AnalysisPhase string

const (
	// AnalysisRunning: the check is still measuring.
	AnalysisRunning AnalysisPhase = "Running"
	// AnalysisSuccessful: the check passed.
	AnalysisSuccessful AnalysisPhase = "Successful"
	// AnalysisFailed: the check failed; the release rolls back.
	AnalysisFailed AnalysisPhase = "Failed"
	// AnalysisInconclusive: the check cannot say; the release pauses for a person.
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
	// AnalysisError: the check itself is broken (e.g. a condition does not compile) or, for
	// one measurement, the provider returned an error.
	AnalysisError AnalysisPhase = "Error"
	// AnalysisStopped: the check was still measuring when the release rolled back; it
	// measures no more and has no verdict.
	AnalysisStopped AnalysisPhase = "Stopped"
)

// MaxAnalysisMeasurements is how many of the latest measurements a check's status keeps.
const MaxAnalysisMeasurements = 10

// AnalysisCheckStatus is the state of one check of the current step.
type AnalysisCheckStatus struct {
	// Name is the check's name in spec.analysis; a check of a template is named
	// "<entry>.<check>".
	Name string `json:"name"`

	// Template is the template a check came from, "Kind/name"; empty for an inline check.
	// +optional
	Template string `json:"template,omitempty"`

	// Phase is Running, Successful, Failed, Inconclusive or Error.
	// +optional
	Phase AnalysisPhase `json:"phase,omitempty"`

	// Message says why the check is in its phase, e.g. the failing value and condition.
	// +optional
	Message string `json:"message,omitempty"`

	// StartedAt is when the check started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// Count is the number of measurements taken (errors not included).
	// +optional
	Count int32 `json:"count,omitempty"`
	// Successful is the number of successful measurements.
	// +optional
	Successful int32 `json:"successful,omitempty"`
	// Failed is the number of failed measurements.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Inconclusive is the number of inconclusive measurements.
	// +optional
	Inconclusive int32 `json:"inconclusive,omitempty"`
	// Errors is the number of provider errors.
	// +optional
	Errors int32 `json:"errors,omitempty"`
	// ConsecutiveErrors is the number of provider errors since the last measurement.
	// +optional
	ConsecutiveErrors int32 `json:"consecutiveErrors,omitempty"`

	// Measurements are the latest measurements, oldest first (at most 10).
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Measurements []AnalysisMeasurement `json:"measurements,omitempty"`
}

// AnalysisMeasurement is one measurement of a check.
type AnalysisMeasurement struct {
	// Phase is the verdict on this measurement: Successful, Failed, Inconclusive or Error.
	Phase AnalysisPhase `json:"phase"`
	// Value is the measured value as text, e.g. "0.02" or "[0.02,0.01]".
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value string `json:"value,omitempty"`
	// MeasuredAt is when the measurement was taken.
	MeasuredAt metav1.Time `json:"measuredAt"`
	// Message gives the reason, e.g. the provider's error.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}
