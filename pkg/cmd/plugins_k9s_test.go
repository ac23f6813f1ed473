package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// k9sResource is what k9s knows of a resource when it names its view.
type k9sResource struct {
	group, version, plural, kind string
	shortNames                   []string
	custom                       bool // a custom resource (CRD)
}

// k9sViewAliases are the names a plugin scope matches in the view of r, in k9s from
// k9sMinVersion on: internal/view/browser.go Aliases (the aliases defined for the view's GVR,
// plus its plural, singular and short names) and internal/dao/alias.go load (for a custom
// resource: its kind in lower case, plural, singular, short names, group/version/plural and
// plural.group; for a built-in one: plural.version.group and group/version/plural, and, in the
// standard groups, plural, singular and short names).
func k9sViewAliases(r k9sResource) map[string]bool {
	singular := strings.ToLower(r.kind)
	names := []string{r.plural, singular, r.group + "/" + r.version + "/" + r.plural}
	names = append(names, r.shortNames...)
	if r.custom {
		names = append(names, r.plural+"."+r.group)
	} else {
		names = append(names, r.plural+"."+r.version+"."+r.group)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// ourResource is how k9s sees the resource of one of the plugin's kinds.
func ourResource(k workload.Kind) k9sResource {
	return k9sResource{group: k.Resource.Group, version: k.Resource.Version, plural: k.Resource.Resource, kind: k.Name,
		shortNames: []string{k.Short}, custom: k.Resource.Group == v1alpha1.SchemeGroupVersion.Group}
}

// othersResources are other projects' resources of the same plural names as ours, which a bare
// plural scope would reach too.
var othersResources = []k9sResource{
	{group: "flagger.app", version: "v1beta1", plural: "canaries", kind: "Canary", shortNames: []string{"canary"}, custom: true},
	{group: "apps.kruise.io", version: "v1alpha1", plural: "uniteddeployments", kind: "UnitedDeployment", shortNames: []string{"ud"}, custom: true},
	{group: "apps.tkestack.io", version: "v1", plural: "tapps", kind: "TApp", custom: true},
	{group: "argoproj.io", version: "v1alpha1", plural: "analysistemplates", kind: "AnalysisTemplate", custom: true},
	{group: "argoproj.io", version: "v1alpha1", plural: "clusteranalysistemplates", kind: "ClusterAnalysisTemplate", custom: true},
}

// k9sScopeProblems says why a scope would reach a view it should not, or none of ours.
func k9sScopeProblems(scope string) []string {
	var out []string
	k, ok := workload.KindFor(scope)
	if !ok || !k9sViewAliases(ourResource(k))[scope] {
		out = append(out, "matches none of our kinds' views in k9s")
	}
	for _, r := range othersResources {
		if k9sViewAliases(r)[scope] {
			out = append(out, "also matches the view of "+r.plural+"."+r.group)
		}
	}
	return out
}

// Every scope reaches the view of one of our kinds, and no other project's resource of the same
// name: Flagger's canaries, Kruise's uniteddeployments, TKEStack's tapps.
func TestK9sPluginScopesAreOurs(t *testing.T) {
	for name, p := range readPlugins(t) {
		for _, scope := range p.Scopes {
			for _, problem := range k9sScopeProblems(scope) {
				t.Errorf("%s: scope %s %s", name, scope, problem)
			}
		}
	}
	// The check refuses the bare plurals of earlier plugins.yaml versions.
	for _, scope := range []string{"canaries", "uniteddeployments", "tapps", "canary", "ud", "widgets", "analysistemplates", "clusteranalysistemplates"} {
		if len(k9sScopeProblems(scope)) == 0 {
			t.Errorf("scope %s passed the check", scope)
		}
	}
}

// k9sFeatures are what plugins.yaml may use that not every k9s accepts, with the first release
// that does, read in k9s's source (git log -S of the files named).
var k9sFeatures = []struct {
	what, since string
	uses        func(k9sPlugin) bool
}{
	{"$RESOURCE_NAME and $RESOURCE_GROUP (internal/view/table.go defaultEnv)", "v0.24.15",
		func(p k9sPlugin) bool { return argsHave(p, "$RESOURCE_") }},
	{"dangerous: the schema of k9s 0.31.0 to 0.32.3 refuses the whole file (internal/config/json/schemas/plugins.json)", "v0.32.4",
		func(p k9sPlugin) bool { return p.Dangerous }},
	{"overwriteOutput (internal/config/json/schemas/plugins.json)", "v0.32.5",
		func(p k9sPlugin) bool { return p.OverwriteOutput }},
	{"$KUBECONFIG when k9s was not given --kubeconfig: before, empty (internal/view/helpers.go k8sEnv)", "v0.40.0",
		func(p k9sPlugin) bool { return argsHave(p, "$KUBECONFIG") }},
	{"a group-qualified scope: a custom resource's view matches plural.group once aliases are looked up by GVR (internal/view/browser.go Aliases)", "v0.50.0",
		func(p k9sPlugin) bool {
			return slices.ContainsFunc(p.Scopes, func(s string) bool { return strings.Contains(s, ".") })
		}},
}

func argsHave(p k9sPlugin, s string) bool {
	return slices.ContainsFunc(p.Args, func(a string) bool { return strings.Contains(a, s) })
}

// k9sVersionNeeded is the oldest k9s that accepts every plugin, and why.
func k9sVersionNeeded(plugins map[string]k9sPlugin) (string, []string) {
	need, why := "v0.0.0", []string(nil)
	for _, f := range k9sFeatures {
		used := false
		for _, p := range plugins {
			used = used || f.uses(p)
		}
		if !used {
			continue
		}
		why = append(why, f.since+": "+f.what)
		if version.MustParseSemantic(f.since).GreaterThan(version.MustParseSemantic(need)) {
			need = f.since
		}
	}
	return need, why
}

// The header of plugins.yaml names the oldest k9s that accepts it: the newest feature it uses.
func TestK9sMinimumVersionStated(t *testing.T) {
	need, why := k9sVersionNeeded(readPlugins(t))
	if need != k9sMinVersion {
		t.Errorf("plugins.yaml needs k9s %s, the keys are checked against %s; it uses:\n%s", need, k9sMinVersion, strings.Join(why, "\n"))
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "k9s " + strings.TrimPrefix(need, "v") + " or later"; !strings.Contains(strings.Join(strings.Fields(string(data)), " "), want) {
		t.Errorf("the header does not say %q", want)
	}
	// The check would see a file needing less, or more.
	if v, _ := k9sVersionNeeded(map[string]k9sPlugin{"p": {Scopes: []string{"canaries"}, Dangerous: true}}); v != "v0.32.4" {
		t.Errorf("dangerous with bare scopes: %s, want v0.32.4", v)
	}
	if v, _ := k9sVersionNeeded(map[string]k9sPlugin{"p": {Scopes: []string{"canaries.apps.workload.dev"}}}); v != "v0.50.0" {
		t.Errorf("a group-qualified scope: %s, want v0.50.0", v)
	}
}

// k9sSubstitute replaces k9s's variables in arg as k9s does (internal/view/env.go Substitute):
// every $X, $!X, ${X} or ${!X} whose name, in upper case, is one of env's; the others stay.
func k9sSubstitute(arg string, env map[string]string) string {
	return k9sVariableRX.ReplaceAllStringFunc(arg, func(v string) string {
		if val, ok := env[strings.ToUpper(k9sVariableName(k9sVariableRX.FindStringSubmatch(v)))]; ok {
			return val
		}
		return v
	})
}

// Each shortcut's script, run by sh as k9s runs it (variables substituted, the process's
// environment without KUBECONFIG, as when k9s was started with --kubeconfig), runs kubectl
// with k9s's kubeconfig in KUBECONFIG, the kind with its group, and the values typed at its
// prompt.
func TestK9sPluginScriptsPassTheKubeconfig(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	record := filepath.Join(bin, "kubectl.log")
	fake := "#!/bin/sh\nprintf '%s\\n' \"KUBECONFIG=${KUBECONFIG-(unset)}\" \"$*\" >> " + record + "\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, p := range readPlugins(t) {
		for _, scope := range p.Scopes {
			k, _ := workload.KindFor(scope)
			env := map[string]string{"RESOURCE_NAME": k.Resource.Resource, "RESOURCE_GROUP": k.Resource.Group, "RESOURCE_VERSION": k.Resource.Version,
				"NAME": "web", "NAMESPACE": "shop", "CONTEXT": "k9s-context", "KUBECONFIG": "/home/me/.kube/k9s config"}
			var args []string
			for _, a := range p.Args {
				args = append(args, k9sSubstitute(a, env))
			}
			_ = os.Remove(record)
			cmd := exec.Command(sh, args...)
			cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
			// What a person types: the input's values, without the flags the script adds.
			typed := slices.DeleteFunc(slices.Clone(pluginInputs[name][scope]), func(w string) bool { return strings.HasPrefix(w, "-") })
			cmd.Stdin = strings.NewReader(strings.Join(typed, " ") + "\n\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s on %s: %v: %s", name, scope, err, out)
				continue
			}
			got, err := os.ReadFile(record)
			if err != nil {
				t.Errorf("%s on %s: kubectl did not run: %v", name, scope, err)
				continue
			}
			lines := strings.Split(strings.TrimSpace(string(got)), "\n")
			wantType := k.Resource.Resource + "." + k.Resource.Group + " web -n shop --context k9s-context"
			if len(lines) != 2 || lines[0] != "KUBECONFIG=/home/me/.kube/k9s config" || !strings.Contains(lines[1], wantType) {
				t.Errorf("%s on %s: kubectl ran as\n%s\nwant KUBECONFIG=/home/me/.kube/k9s config and %q", name, scope, got, wantType)
			}
			for _, in := range pluginInputs[name][scope] {
				if !strings.Contains(lines[len(lines)-1], in) {
					t.Errorf("%s on %s: the input %q is not passed on: %s", name, scope, in, got)
				}
			}
		}
	}
}
