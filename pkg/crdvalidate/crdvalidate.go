// Package crdvalidate checks custom resources against our CRDs offline, the way the API server
// does on create: schema defaults, then the OpenAPI schema, then the CEL rules. It lets unit tests
// and `--dry-run=client` refuse bad objects with the server's own messages, without a server.
package crdvalidate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Validator validates objects of the kinds of a set of CRDs.
type Validator struct {
	kinds map[schema.GroupVersionKind]*kindSchema
}

type kindSchema struct {
	structural *structuralschema.Structural
	schema     schemavalidation.SchemaValidator
	cel        *cel.Validator
}

// ToInternal converts a CRD to the API server's internal form, which its validation code takes.
func ToInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return nil, fmt.Errorf("converting CRD %s: %w", crd.Name, err)
	}
	return internal, nil
}

// CheckDefinition runs the API server's own CRD validation: structural schema, defaults, CEL
// compilation and CEL cost limits. A CRD that passes is one the API server accepts.
func CheckDefinition(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (field.ErrorList, error) {
	internal, err := ToInternal(crd)
	if err != nil {
		return nil, err
	}
	// The API server records the storage version on create; a manifest leaves status empty.
	internal.Status.StoredVersions = nil
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = append(internal.Status.StoredVersions, v.Name)
		}
	}
	return apiextensionsvalidation.ValidateCustomResourceDefinition(ctx, internal), nil
}

// New builds a Validator for every served version of the given CRDs.
func New(crds []*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupVersionKind]*kindSchema{}}
	for _, crd := range crds {
		internal, err := ToInternal(crd)
		if err != nil {
			return nil, err
		}
		for _, ver := range internal.Spec.Versions {
			// The internal form hoists a schema shared by every version to spec.validation.
			validation := ver.Schema
			if validation == nil {
				validation = internal.Spec.Validation
			}
			if validation == nil || validation.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, ver.Name)
			}
			structural, err := structuralschema.NewStructural(validation.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, ver.Name, err)
			}
			sv, _, err := schemavalidation.NewSchemaValidator(validation.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, ver.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: internal.Spec.Group, Version: ver.Name, Kind: internal.Spec.Names.Kind}
			v.kinds[gvk] = &kindSchema{
				structural: structural,
				schema:     sv,
				cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	return v, nil
}

// Validate applies the schema defaults to a copy of obj and validates it as a create. It returns
// the defaulted copy with the errors; an object of a kind the Validator does not know is an error.
func (v *Validator) Validate(ctx context.Context, obj map[string]interface{}) (map[string]interface{}, field.ErrorList, error) {
	u := runtime.DeepCopyJSON(obj)
	apiVersion, _ := u["apiVersion"].(string)
	kind, _ := u["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, nil, err
	}
	ks, ok := v.kinds[gv.WithKind(kind)]
	if !ok {
		return nil, nil, fmt.Errorf("no CRD for %s %s", apiVersion, kind)
	}
	structuraldefaulting.Default(u, ks.structural)
	errs := schemavalidation.ValidateCustomResource(nil, u, ks.schema)
	// The API server refuses duplicate keys of list maps and sets after the schema (its
	// customResourceStrategy does), so the offline check does too.
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, ks.structural, u)...)
	celErrs, _ := ks.cel.Validate(ctx, nil, ks.structural, u, nil, celconfig.RuntimeCELCostBudget)
	return u, append(errs, celErrs...), nil
}
