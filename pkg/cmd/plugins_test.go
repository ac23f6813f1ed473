package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// k9sPlugin is one entry of k9s's plugins.yaml (k9s's own schema: internal/config/plugin.go).
type k9sPlugin struct {
	ShortCut        string   `json:"shortCut"`
	Override        bool     `json:"override"`
	Description     string   `json:"description"`
	Scopes          []string `json:"scopes"`
	Command         string   `json:"command"`
	Background      bool     `json:"background"`
	Confirm         bool     `json:"confirm"`
	Dangerous       bool     `json:"dangerous"`
	OverwriteOutput bool     `json:"overwriteOutput"`
	Args            []string `json:"args"`
	Pipes           []string `json:"pipes"`
}

// k9sVariables are the $VARIABLES k9s substitutes in a resource view (internal/view/helpers.go
// defaultEnv, internal/view/table.go envFn). k9s leaves any other $WORD in place (with a warning
// in its log), so sh would expand it as an unset shell variable: a plugin must use none.
var k9sVariables = map[string]bool{
	"NAMESPACE": true, "NAME": true, "CONTEXT": true, "CLUSTER": true, "USER": true, "GROUPS": true,
	"KUBECONFIG": true, "FILTER": true, "RESOURCE_GROUP": true, "RESOURCE_VERSION": true, "RESOURCE_NAME": true,
}

// k9sVariableRX is how k9s finds variables in args: $X, $!X, ${X} and ${!X}, matched
// case-insensitively against its variables (internal/view/env.go envRX).
var k9sVariableRX = regexp.MustCompile(`(\$(!?)([\w\-]+))|(\$\{(!?)([\w\-%/: ]+)})`)

// k9sVariableName is the variable a k9sVariableRX match names.
func k9sVariableName(m []string) string {
	if m[1] != "" {
		return m[3]
	}
	return m[6]
}

// readOnlyVerbs change nothing; every other verb must ask for confirmation.
var readOnlyVerbs = map[string]bool{"status": true, "get": true, "list": true, "history": true, "version": true, "completion": true}

// pluginInputs are values typed at a plugin's prompt (piped to xargs), per plugin and scope.
var pluginInputs = map[string]map[string][]string{
	"workload-promote-subsets":       {"uniteddeployments": {"--subset", "zone-a"}},
	"workload-kill-instance":         {"tapps": {"1", "3"}},
	"workload-set-partition":         {"tapps": {"2"}, "statefulsets": {"1"}},
	"workload-set-subset-partitions": {"uniteddeployments": {"zone-a=0", "zone-b=2"}},
}

func readPlugins(t *testing.T) map[string]k9sPlugin {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Plugins map[string]k9sPlugin `json:"plugins"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatalf("plugins.yaml: %v", err)
	}
	if len(file.Plugins) == 0 {
		t.Fatal("plugins.yaml has no plugin")
	}
	return file.Plugins
}

// invocation is one `kubectl workload …` a plugin runs.
type invocation struct {
	args  []string // after "kubectl workload", still holding k9s variables
	xargs bool     // the prompt's input is appended
}

var invocationRX = regexp.MustCompile(`(xargs )?kubectl workload ([^;|]*)`)

// invocations finds the plugin's kubectl workload commands, in args or in a sh -c script.
func invocations(t *testing.T, p k9sPlugin) []invocation {
	t.Helper()
	switch p.Command {
	case "kubectl":
		if len(p.Args) == 0 || p.Args[0] != "workload" {
			t.Fatalf("kubectl %v is not a kubectl workload command", p.Args)
		}
		return []invocation{{args: p.Args[1:]}}
	case "sh", "bash":
		if len(p.Args) != 2 || p.Args[0] != "-c" {
			t.Fatalf("%s %v: want -c SCRIPT", p.Command, p.Args)
		}
		var out []invocation
		for _, m := range invocationRX.FindAllStringSubmatch(p.Args[1], -1) {
			out = append(out, invocation{args: shellWords(t, m[2]), xargs: m[1] != ""})
		}
		return out
	}
	t.Fatalf("command %q: want kubectl, sh or bash", p.Command)
	return nil
}

// shellWords splits a simple command line: words separated by spaces, "double" or 'single'
// quotes removed.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// run runs the real root command with args and returns the message it failed with ("" if it did
// not fail).
func run(args []string) (msg string) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdWorkload(streams)
	root.SetArgs(args)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	type fatal struct{ msg string }
	cmdutil.BehaviorOnFatal(func(m string, _ int) { panic(fatal{m}) })
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			msg = f.msg
		}
	}()
	if err := root.Execute(); err != nil {
		return err.Error()
	}
	return ""
}

// Every shortcut of plugins.yaml runs a real verb of the plugin, with flags it has, on kinds it
// accepts; mutating verbs ask for confirmation; k9s can substitute every variable.
func TestK9sPluginsRunRealVerbs(t *testing.T) {
	noCluster(t)

	plugins := readPlugins(t)
	seen := map[string]string{} // shortcut+scope → plugin
	for name, p := range plugins {
		t.Run(name, func(t *testing.T) {
			if p.ShortCut == "" || p.Description == "" || len(p.Scopes) == 0 || p.Command == "" {
				t.Fatalf("shortCut, description, scopes and command are all required: %+v", p)
			}
			for _, arg := range p.Args {
				for _, m := range k9sVariableRX.FindAllStringSubmatch(arg, -1) {
					if !k9sVariables[strings.ToUpper(k9sVariableName(m))] {
						t.Errorf("%s is not a k9s variable: k9s leaves it to the shell, which expands it to nothing", m[0])
					}
				}
			}
			for _, scope := range p.Scopes {
				if _, ok := workload.KindFor(scope); !ok {
					t.Errorf("scope %q is not one of the plugin's kinds", scope)
				}
				key := p.ShortCut + " in " + scope
				if other, dup := seen[key]; dup {
					t.Errorf("%s is also bound by %s", key, other)
				}
				seen[key] = name
			}
			invs := invocations(t, p)
			if len(invs) == 0 {
				t.Fatal("runs no kubectl workload command")
			}
			for _, inv := range invs {
				if len(inv.args) == 0 {
					t.Fatal("kubectl workload without a verb")
				}
				verb := inv.args[0]
				if !readOnlyVerbs[verb] && !p.Confirm {
					t.Errorf("%s changes the workload: confirm: true is required", verb)
				}
				for _, scope := range p.Scopes {
					args := substitute(inv.args, scope)
					if inv.xargs {
						input, ok := pluginInputs[name][scope]
						if !ok {
							t.Fatalf("no sample input for %s on %s: add one to pluginInputs", name, scope)
						}
						args = append(args, input...)
					}
					msg := run(args)
					for _, bad := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "does not work on",
						"unknown workload type", "name the workload", "unexpected argument", "invalid argument"} {
						if strings.Contains(msg, bad) {
							t.Errorf("kubectl workload %s: %s", strings.Join(args, " "), msg)
						}
					}
					if msg == "" {
						t.Errorf("kubectl workload %s succeeded without a cluster", strings.Join(args, " "))
					}
				}
			}
		})
	}
	for _, want := range []string{"status", "promote", "pause", "resume", "abort", "kill-instance", "set-partition"} {
		found := false
		for _, p := range plugins {
			for _, inv := range invocations(t, p) {
				found = found || inv.args[0] == want
			}
		}
		if !found {
			t.Errorf("no shortcut runs %s", want)
		}
	}
}

// substitute fills k9s's variables as k9s would for a selected object of the scope.
func substitute(args []string, scope string) []string {
	values := map[string]string{"RESOURCE_NAME": scope, "NAME": "web", "NAMESPACE": "shop", "CONTEXT": "k9s-context"}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = k9sVariableRX.ReplaceAllStringFunc(a, func(v string) string {
			m := k9sVariableRX.FindStringSubmatch(v)
			if val, ok := values[strings.ToUpper(k9sVariableName(m))]; ok {
				return val
			}
			return v
		})
	}
	return out
}

// The check above would notice a plugin running a verb that does not exist.
func TestK9sPluginCheckCatchesAWrongVerb(t *testing.T) {
	noCluster(t)
	for _, args := range [][]string{
		{"rollback", "canaries", "web"},
		{"pause", "statefulsets", "web"},
		{"status", "canaries", "web", "--follow"},
	} {
		msg := run(args)
		if !strings.Contains(msg, "unknown command") && !strings.Contains(msg, "does not work on") && !strings.Contains(msg, "unknown flag") {
			t.Errorf("kubectl workload %v: %q, want a refusal", args, msg)
		}
	}
}

// noCluster points the plugin at a context whose API server refuses connections at once: every
// verb checks its arguments, then fails reading the object.
func noCluster(t *testing.T) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- name: none
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: k9s-context
  context: {cluster: none, user: nobody}
current-context: k9s-context
users:
- name: nobody
  user: {token: none}
`
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
}

// k9sVersion is the k9s release whose key bindings k9sViewKeys lists.
const k9sVersion = "v0.51.0"

// k9sKey is a key k9s binds itself in a view.
type k9sKey struct {
	action string
	// volatile: the table binds or unbinds the key on every refresh (ui.Table.doUpdate), after
	// plugins are loaded, so not even override: true lets a plugin keep it.
	volatile bool
}

// k9sViewKeys are the keys k9s (k9sVersion) binds in the views plugins.yaml's scopes reach, by
// view, as k9s names them in a shortCut (tcell's key names). Each list names the k9s source it
// is read from.
var k9sViewKeys = map[string]map[string]k9sKey{
	// Every resource view: internal/view/app.go bindKeys (the app's own keys, under the view's).
	"app": {
		"Ctrl-E": {action: "ToggleHeader"}, "Ctrl-G": {action: "ToggleCrumbs"}, "?": {action: "Help"},
		"[": {action: "Go Back"}, "]": {action: "Go Forward"}, "-": {action: "Last View"},
		"Ctrl-A": {action: "Aliases"}, "Enter": {action: "Goto"}, "Ctrl-C": {action: "Quit"},
	},
	// Every resource table: internal/view/table.go bindKeys, internal/ui/table.go doUpdate,
	// internal/view/browser.go bindKeys, refreshActions and namespaceActions.
	"table": {
		"?": {action: "Help"}, " ": {action: "Mark"}, "Ctrl-Space": {action: "Mark Range"},
		`Ctrl-\`: {action: "Marks Clear"}, "Ctrl-S": {action: "Save"}, "/": {action: "Filter Mode"},
		"Ctrl-Z": {action: "Toggle Faults"}, "Ctrl-W": {action: "Toggle Wide"},
		"Shift-N": {action: "Sort Name"}, "Shift-A": {action: "Sort Age"}, "Shift-S": {action: "Sort Status"},
		"Shift-O": {action: "Sort Selected Column"},
		"Shift-P": {action: "Sort Namespace (all-namespaces views)", volatile: true},
		"Esc":     {action: "Filter Reset"}, "q": {action: "Filter Reset"}, "Enter": {action: "View"},
		"c": {action: "Copy"}, "Ctrl-R": {action: "Refresh"}, "e": {action: "Edit"}, "Ctrl-D": {action: "Delete"},
		"y": {action: "YAML"}, "d": {action: "Describe"}, "n": {action: "Copy Namespace"},
		"w": {action: "Warp To Namespace"}, "0": {action: "all namespaces"}, "1": {action: "favorite namespace"},
		"2": {action: "favorite namespace"}, "3": {action: "favorite namespace"}, "4": {action: "favorite namespace"},
		"5": {action: "favorite namespace"}, "6": {action: "favorite namespace"}, "7": {action: "favorite namespace"},
		"8": {action: "favorite namespace"}, "9": {action: "favorite namespace"},
	},
	// A custom resource (no viewer of its own): internal/view/command.go viewMetaFor,
	// NewScaleExtender(NewOwnerExtender(NewBrowser)).
	"custom-resource": {
		"s": {action: "Scale"}, "Shift-J": {action: "Jump Owner"},
	},
	// internal/view/dp.go NewDeploy and bindKeys, with the extenders of k9sExtenderKeys.
	"deployments": withExtenderKeys(map[string]k9sKey{"z": {action: "ReplicaSets"}}),
	// internal/view/sts.go NewStatefulSet, with the extenders of k9sExtenderKeys.
	"statefulsets": withExtenderKeys(map[string]k9sKey{}),
	// internal/view/ds.go NewDaemonSet and bindKeys: the port-forward, restart, image and logs
	// extenders, and its sort keys.
	"daemonsets": {
		"f": {action: "Show PortForward"}, "Shift-F": {action: "Port-Forward"}, "r": {action: "Restart"},
		"i": {action: "Set Image"}, "l": {action: "Logs"}, "p": {action: "Logs Previous"},
		"Shift-D": {action: "Sort Desired"}, "Shift-C": {action: "Sort Current"}, "Shift-R": {action: "Sort Ready"},
		"Shift-U": {action: "Sort UpToDate"}, "Shift-L": {action: "Sort Available"},
	},
}

// withExtenderKeys adds the keys of the extenders k9s wraps Deployments and StatefulSets in:
// internal/view/pf_extender.go, vul_extender.go, restart_extender.go, scale_extender.go,
// image_extender.go, owner_extender.go and logs_extender.go.
func withExtenderKeys(keys map[string]k9sKey) map[string]k9sKey {
	for k, v := range map[string]k9sKey{
		"f": {action: "Show PortForward"}, "Shift-F": {action: "Port-Forward"},
		"v": {action: "Show Vulnerabilities"}, "Shift-V": {action: "Sort Vulnerabilities"}, "r": {action: "Restart"},
		"s": {action: "Scale"}, "i": {action: "Set Image"}, "Shift-J": {action: "Jump Owner"},
		"l": {action: "Logs"}, "p": {action: "Logs Previous"},
	} {
		keys[k] = v
	}
	return keys
}

// k9sScopeViews are the views of k9sViewKeys that show a scope of plugins.yaml.
var k9sScopeViews = map[string][]string{
	"tapps":             {"app", "table", "custom-resource"},
	"uniteddeployments": {"app", "table", "custom-resource"},
	"canaries":          {"app", "table", "custom-resource"},
	"deployments":       {"app", "table", "deployments"},
	"statefulsets":      {"app", "table", "statefulsets"},
	"daemonsets":        {"app", "table", "daemonsets"},
}

// k9sKeyCollisions lists the shortcuts of plugins that take a key k9s binds in a view their
// scopes reach: k9s refuses such a plugin ("duplicate plugin key") unless it says override: true,
// and even then cannot keep a volatile key.
func k9sKeyCollisions(plugins map[string]k9sPlugin) []string {
	var out []string
	for name, p := range plugins {
		for _, scope := range p.Scopes {
			views, ok := k9sScopeViews[scope]
			if !ok {
				out = append(out, fmt.Sprintf("%s: scope %s: no k9s view listed for it", name, scope))
				continue
			}
			for _, view := range views {
				key, taken := k9sViewKeys[view][p.ShortCut]
				switch {
				case !taken:
				case key.volatile:
					out = append(out, fmt.Sprintf("%s: %s in %s is k9s's %q, rebound on every refresh (override cannot keep it)", name, p.ShortCut, scope, key.action))
				case !p.Override:
					out = append(out, fmt.Sprintf("%s: %s in %s is k9s's %q (another key, or override: true to take it over)", name, p.ShortCut, scope, key.action))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// No shortcut of plugins.yaml takes a key k9s binds in a view its scopes reach.
func TestK9sPluginKeysFreeInK9s(t *testing.T) {
	for _, c := range k9sKeyCollisions(readPlugins(t)) {
		t.Errorf("k9s %s: %s", k9sVersion, c)
	}
}

// The collision check refuses what k9s refuses: the Shift-P promote shortcut of earlier
// plugins.yaml versions (k9s's sort by namespace), with or without override, and a key a view
// binds; it accepts an override of a fixed key, and a key k9s leaves free.
func TestK9sPluginKeyCheckCatchesCollisions(t *testing.T) {
	for _, c := range []struct {
		plugin k9sPlugin
		want   bool
	}{
		{k9sPlugin{ShortCut: "Shift-P", Scopes: []string{"canaries"}}, true},
		{k9sPlugin{ShortCut: "Shift-P", Scopes: []string{"uniteddeployments"}, Override: true}, true},
		{k9sPlugin{ShortCut: "Shift-F", Scopes: []string{"deployments"}}, true},
		{k9sPlugin{ShortCut: "Shift-J", Scopes: []string{"tapps"}}, true},
		{k9sPlugin{ShortCut: "Shift-J", Scopes: []string{"tapps"}, Override: true}, false},
		{k9sPlugin{ShortCut: "Shift-F", Scopes: []string{"canaries"}}, false},
		{k9sPlugin{ShortCut: "Shift-U", Scopes: []string{"canaries", "deployments", "statefulsets"}}, false},
		{k9sPlugin{ShortCut: "Shift-U", Scopes: []string{"pods"}}, true}, // a view the list does not cover
	} {
		got := k9sKeyCollisions(map[string]k9sPlugin{"p": c.plugin})
		if (len(got) > 0) != c.want {
			t.Errorf("%s on %v (override %v): collisions %v, want any: %v", c.plugin.ShortCut, c.plugin.Scopes, c.plugin.Override, got, c.want)
		}
	}
}

// k9s kills a plugin's command on Ctrl-C and clears the screen when it ends: every shortcut ends
// by itself (status follows the rollout only until it pauses) and waits for Enter, so that its
// output stays on screen until it has been read.
func TestK9sPluginsEndAndKeepTheirOutput(t *testing.T) {
	for name, p := range readPlugins(t) {
		if p.Background {
			t.Errorf("%s: background: true shows no output", name)
		}
		if p.Command != "sh" || len(p.Args) != 2 {
			t.Errorf("%s: want sh -c SCRIPT", name)
			continue
		}
		if !strings.HasSuffix(p.Args[1], "printf '\\nPress Enter to return to k9s '; head -n 1 >/dev/null") {
			t.Errorf("%s: the script does not end waiting for Enter: %s", name, p.Args[1])
		}
		for _, inv := range invocations(t, p) {
			watch := slices.Contains(inv.args, "-w") || slices.Contains(inv.args, "--watch")
			if watch && !slices.Contains(inv.args, "--success-on-pause") {
				t.Errorf("%s: %v follows a paused rollout forever: add --success-on-pause", name, inv.args)
			}
		}
	}
}
