package agent

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-workload/kubectl-workload/config"
)

const serviceAccount = "workload-agent"

// granted expands the RBAC objects of config/agent into the permissions they give the agent's
// ServiceAccount: a ClusterRole through a ClusterRoleBinding cluster-wide, a Role through a
// RoleBinding in its namespace. It refuses what a least-privilege grant never needs: wildcards,
// resourceNames, nonResourceURLs, a rule granting a permission another rule already grants, and a
// role no binding gives the agent (or a binding to a role that does not exist).
func granted(objs []*unstructured.Unstructured) (map[Key]string, error) {
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	roles := map[string]*rbacv1.Role{} // by namespace/name
	var crbs []*rbacv1.ClusterRoleBinding
	var rbs []*rbacv1.RoleBinding
	for _, o := range objs {
		var into any
		switch o.GetKind() {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			clusterRoles[o.GetName()], into = r, r
		case "Role":
			r := &rbacv1.Role{}
			roles[o.GetNamespace()+"/"+o.GetName()], into = r, r
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			crbs, into = append(crbs, b), b
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			rbs, into = append(rbs, b), b
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", o.GetKind(), o.GetName(), err)
		}
	}

	out := map[Key]string{}
	used := map[string]bool{}
	add := func(source, namespace string, rules []rbacv1.PolicyRule) error {
		for i, r := range rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				return fmt.Errorf("%s rule %d: resourceNames or nonResourceURLs, which the agent never needs", source, i)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if g == "*" || res == "*" || v == "*" || strings.HasSuffix(res, "/*") {
							return fmt.Errorf("%s rule %d: wildcard %q/%q/%q", source, i, g, res, v)
						}
						k := Key{Group: g, Resource: res, Verb: v, Namespace: namespace}
						if prev, ok := out[k]; ok {
							return fmt.Errorf("%s rule %d grants %s again (already granted by %s)", source, i, k, prev)
						}
						out[k] = fmt.Sprintf("%s rule %d", source, i)
					}
				}
			}
		}
		return nil
	}
	bindsAgent := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == Namespace {
				return true
			}
		}
		return false
	}
	for _, b := range crbs {
		if !bindsAgent(b.Subjects) {
			return nil, fmt.Errorf("ClusterRoleBinding %s does not bind the agent's ServiceAccount", b.Name)
		}
		role := clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || role == nil {
			return nil, fmt.Errorf("ClusterRoleBinding %s refers to %s %s, which config/agent does not define", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		used["ClusterRole/"+role.Name] = true
		if err := add("ClusterRole "+role.Name, "", role.Rules); err != nil {
			return nil, err
		}
	}
	for _, b := range rbs {
		if !bindsAgent(b.Subjects) {
			return nil, fmt.Errorf("RoleBinding %s/%s does not bind the agent's ServiceAccount", b.Namespace, b.Name)
		}
		if b.RoleRef.Kind != "Role" {
			return nil, fmt.Errorf("RoleBinding %s/%s binds a %s; the agent's namespaced grants are Roles", b.Namespace, b.Name, b.RoleRef.Kind)
		}
		role := roles[b.Namespace+"/"+b.RoleRef.Name]
		if role == nil {
			return nil, fmt.Errorf("RoleBinding %s/%s refers to Role %s, which config/agent does not define in that namespace", b.Namespace, b.Name, b.RoleRef.Name)
		}
		used["Role/"+b.Namespace+"/"+role.Name] = true
		if err := add("Role "+b.Namespace+"/"+role.Name, b.Namespace, role.Rules); err != nil {
			return nil, err
		}
	}
	for name := range clusterRoles {
		if !used["ClusterRole/"+name] {
			return nil, fmt.Errorf("ClusterRole %s is bound to nothing", name)
		}
	}
	for key := range roles {
		if !used["Role/"+key] {
			return nil, fmt.Errorf("Role %s is bound to nothing", key)
		}
	}
	return out, nil
}

// The RBAC manifests grant exactly the permissions of Permissions.
func TestRBACGrantsExactlyPermissions(t *testing.T) {
	objs, err := config.AgentManifests()
	if err != nil {
		t.Fatal(err)
	}
	got, err := granted(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Key]bool{}
	for _, p := range Permissions {
		if want[p.Key()] {
			t.Errorf("Permissions lists %s twice", p.Key())
		}
		want[p.Key()] = true
		if strings.TrimSpace(p.Why) == "" {
			t.Errorf("Permissions: %s does not say which code needs it", p.Key())
		}
	}
	var extra, missing []string
	for k, src := range got {
		if !want[k] {
			extra = append(extra, fmt.Sprintf("%s (%s)", k, src))
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k.String())
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	for _, e := range extra {
		t.Errorf("the manifests grant %s, which Permissions does not list: remove the grant, or list the call that needs it", e)
	}
	for _, m := range missing {
		t.Errorf("Permissions lists %s, which the manifests do not grant", m)
	}
}

// granted refuses what least privilege rules out.
func TestGrantedRefuses(t *testing.T) {
	role := func(rules string) []*unstructured.Unstructured {
		objs, err := decodeYAML(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules: ` + rules + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: r}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: workload-agent, namespace: workload-system}]
`)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	for name, tc := range map[string]struct {
		rules string
		err   string
	}{
		"ok":             {`[{apiGroups: [""], resources: [pods], verbs: [get]}]`, ""},
		"verb wildcard":  {`[{apiGroups: [""], resources: [pods], verbs: ["*"]}]`, "wildcard"},
		"resource names": {`[{apiGroups: [""], resources: [pods], resourceNames: [a], verbs: [get]}]`, "resourceNames"},
		"twice":          {`[{apiGroups: [""], resources: [pods], verbs: [get]}, {apiGroups: [""], resources: [pods], verbs: [get, list]}]`, "again"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := granted(role(tc.rules))
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, %v; want an error with %q", got, err, tc.err)
			}
		})
	}
}

func decodeYAML(s string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}
