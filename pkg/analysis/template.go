package analysis

import (
	"fmt"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// ExpandTemplate is the checks a template runs for one entry of a Canary's spec.analysis,
// named "<entry>.<check>", with the arguments given (and the template's defaults) substituted.
// The agent and `kubectl workload analyze` both expand templates through it.
func ExpandTemplate(entry string, spec *appsv1alpha1.AnalysisTemplateSpec, given map[string]string) ([]appsv1alpha1.AnalysisCheck, error) {
	args, err := BindArgs(spec.Args, given)
	if err != nil {
		return nil, err
	}
	out := make([]appsv1alpha1.AnalysisCheck, 0, len(spec.Checks))
	for i := range spec.Checks {
		ch, err := Substitute(&spec.Checks[i], args)
		if err != nil {
			return nil, err
		}
		if entry != "" {
			ch.Name = entry + "." + ch.Name
		}
		out = append(out, *ch)
	}
	return out, nil
}

// CanaryArgs are the values an entry of cn's spec.analysis gives its template's arguments; a
// Canary field that is still empty leaves its argument unset (*UnsetArgsError).
func CanaryArgs(cn *appsv1alpha1.Canary, args []appsv1alpha1.AnalysisArgValue) (map[string]string, error) {
	out := map[string]string{}
	var unset []string
	for _, a := range args {
		switch {
		case a.Value != nil:
			out[a.Name] = *a.Value
		case a.ValueFrom != nil:
			v := canaryField(cn, a.ValueFrom.FieldPath)
			if v == "" {
				unset = append(unset, fmt.Sprintf("%s (from %s, which is empty)", a.Name, a.ValueFrom.FieldPath))
				continue
			}
			out[a.Name] = v
		}
	}
	if len(unset) > 0 {
		return nil, &UnsetArgsError{Names: unset}
	}
	return out, nil
}

func canaryField(cn *appsv1alpha1.Canary, path string) string {
	switch path {
	case "metadata.name":
		return cn.Name
	case "metadata.namespace":
		return cn.Namespace
	case "spec.canary.name":
		return cn.Spec.Canary.Name
	case "spec.stableRef.name":
		return cn.Spec.StableRef.Name
	case "status.target.stableRevision":
		if cn.Status.Target != nil {
			return cn.Status.Target.StableRevision
		}
	case "status.target.updateRevision":
		if cn.Status.Target != nil {
			return cn.Status.Target.UpdateRevision
		}
	}
	return ""
}
