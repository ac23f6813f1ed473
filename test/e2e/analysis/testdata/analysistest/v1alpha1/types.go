// Package v1alpha1 is a test-only API that embeds the analysis types the way the Canary will
// (spec.analysis[]), so that test/e2e/analysis can generate a CRD from them with
// controller-gen and check their schema and CEL rules on a real API server before any real
// kind uses them. It lives under testdata: never built with the project.
//
// +groupName=analysistest.workload.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// CheckHolder holds analysis checks and their status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type CheckHolder struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CheckHolderSpec `json:"spec"`
}

// CheckHolderSpec holds the checks.
type CheckHolderSpec struct {
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=name
	Analysis []appsv1alpha1.AnalysisCheck `json:"analysis"`

	// +kubebuilder:validation:MaxItems=20
	// +optional
	Checks []appsv1alpha1.AnalysisCheckStatus `json:"checks,omitempty"`
}
