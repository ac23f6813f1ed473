// Package v1alpha1 is the apps.workload.dev/v1alpha1 API: TApp, UnitedDeployment and Canary.
//
// Validation lives in the CRD (OpenAPI markers and CEL rules) so that bad objects are refused by
// the API server itself, with no admission webhook to operate.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.workload.dev
package v1alpha1
