package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnalysisTemplate is a named set of checks, with arguments, that the Canaries of its namespace
// run by reference (spec.analysis[].templateRef) instead of restating them. See
// docs/analysis.md.
//
// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=atpl,categories=workload
// +kubebuilder:printcolumn:name="Checks",type=string,JSONPath=`.spec.checks[*].name`,description="Names of the template's checks"
// +kubebuilder:printcolumn:name="Args",type=string,JSONPath=`.spec.args[*].name`,description="Names of the template's arguments"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AnalysisTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template's arguments and checks.
	Spec AnalysisTemplateSpec `json:"spec"`
}

// ClusterAnalysisTemplate is an AnalysisTemplate that Canaries of every namespace may use.
// Creating one is a privilege: its checks make the agent send requests wherever they say
// (docs/analysis.md, "Who may write templates").
//
// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=catpl,categories=workload
// +kubebuilder:printcolumn:name="Checks",type=string,JSONPath=`.spec.checks[*].name`,description="Names of the template's checks"
// +kubebuilder:printcolumn:name="Args",type=string,JSONPath=`.spec.args[*].name`,description="Names of the template's arguments"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterAnalysisTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template's arguments and checks.
	Spec AnalysisTemplateSpec `json:"spec"`
}

// The Canary's condition about the templates its spec.analysis names, and its reasons.
const (
	// ConditionAnalysisResolved (Canary) is False while an entry of spec.analysis names a
	// template that does not exist or leaves an argument unset (the release waits), True once
	// every template is found; absent when spec.analysis names no template.
	ConditionAnalysisResolved      = "AnalysisResolved"
	ReasonResolved                 = "Resolved"
	ReasonAnalysisTemplateNotFound = "TemplateNotFound"
	ReasonArgumentUnset            = "ArgumentUnset"
	ReasonInvalidArgument          = "InvalidArgument"
)

// MaxTemplateChecks is the most checks a template holds, and MaxTemplateArgs the most
// arguments: enough for a service's SLOs, and small enough that the CEL rules over them stay
// within the API server's cost budget.
const (
	MaxTemplateChecks = 16
	MaxTemplateArgs   = 32
)

// MaxStepChecks is the most checks one step (or the background) may run once its templates are
// expanded: what status.analysis and status.backgroundAnalysis hold.
const MaxStepChecks = 64

// AnalysisTemplateSpec is what a template declares: its arguments and its checks.
//
// +kubebuilder:validation:XValidation:rule="self.checks.all(c, has(c.provider) && !has(c.templateRef) && !has(c.args))",message="checks of a template are inline: each sets provider, not templateRef or args"
type AnalysisTemplateSpec struct {
	// Args are the arguments the checks use as {{args.NAME}}. An argument without a value must
	// be given one by every Canary that uses the template; one with a value is a default.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Args []AnalysisArg `json:"args,omitempty"`

	// Checks are the template's checks, each the shape of an inline entry of a Canary's
	// spec.analysis. A step that names the template's entry runs all of them.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Checks []AnalysisCheck `json:"checks"`
}

// AnalysisArg declares one argument of a template.
type AnalysisArg struct {
	// Name is written {{args.NAME}} where the argument is used: a letter or underscore, then
	// letters, digits or underscores.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// Value is the default, used when the Canary gives none.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value *string `json:"value,omitempty"`
}

// AnalysisTemplateList is a list of AnalysisTemplates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of AnalysisTemplates.
	Items []AnalysisTemplate `json:"items"`
}

// ClusterAnalysisTemplateList is a list of ClusterAnalysisTemplates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ClusterAnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items is the list of ClusterAnalysisTemplates.
	Items []ClusterAnalysisTemplate `json:"items"`
}
