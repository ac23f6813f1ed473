package agent

import (
	"os"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// config/rbac/member-role.yaml, the agent's Role in a member cluster, grants exactly
// MemberPermissions: no wildcard, no resourceNames, nothing twice.
func TestMemberRoleGrantsExactlyMemberPermissions(t *testing.T) {
	data, err := os.ReadFile("../rbac/member-role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "Role" || role.Namespace == "" {
		t.Fatalf("member-role.yaml is a %s in namespace %q; it must be a namespaced Role", role.Kind, role.Namespace)
	}
	got := map[Key]bool{}
	for i, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %d: resourceNames or nonResourceURLs", i)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					k := Key{Group: g, Resource: res, Verb: v}
					if g == "*" || res == "*" || v == "*" || got[k] {
						t.Errorf("rule %d: wildcard or repeated grant %s", i, k)
					}
					got[k] = true
				}
			}
		}
	}
	want := map[Key]bool{}
	for _, p := range MemberPermissions {
		want[p.Key()] = true
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k.String())
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("member-role.yaml: missing %s; not in MemberPermissions %s", strings.Join(missing, ", "), strings.Join(extra, ", "))
	}
}
