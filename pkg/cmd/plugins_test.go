package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// k9sPlugin is one entry of k9s's plugins.yaml: the fields of k9s's schema at k9sMinVersion
// (internal/config/json/schemas/plugins.json), which refuses the whole file for any other.
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
var readOnlyVerbs = map[string]bool{"status": true, "get": true, "list": true, "history": true, "version": true, "completion": true, "analyze": true}

// pluginInputs are values typed at a plugin's prompt (piped to xargs), per plugin and scope.
var pluginInputs = map[string]map[string][]string{
	"workload-promote-subsets":       {"uniteddeployments.apps.workload.dev": {"--subset", "zone-a"}},
	"workload-kill-instance":         {"tapps.apps.workload.dev": {"1", "3"}},
	"workload-set-partition":         {"tapps.apps.workload.dev": {"2"}, "statefulsets": {"1"}},
	"workload-set-subset-partitions": {"uniteddeployments.apps.workload.dev": {"zone-a=0", "zone-b=2"}},
	"workload-analyze-template": {"analysistemplates.apps.workload.dev": {"--arg", "service=checkout"},
		"clusteranalysistemplates.apps.workload.dev": {"--arg", "service=checkout", "--arg", "threshold=0.01"}},
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
	// kubeconfig: the command gets k9s's $KUBECONFIG as KUBECONFIG.
	kubeconfig bool
}

var invocationRX = regexp.MustCompile(`(KUBECONFIG="\$KUBECONFIG" )?(xargs )?kubectl workload ([^;|]*)`)

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
			out = append(out, invocation{args: shellWords(t, m[3]), xargs: m[2] != "", kubeconfig: m[1] != ""})
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
// accepts, named as k9s names the selected resource; mutating verbs ask for confirmation and are
// dangerous (k9s --readonly leaves them out); every command gets k9s's kubeconfig; k9s can
// substitute every variable.
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
				if !readOnlyVerbs[verb] && !p.Dangerous {
					t.Errorf("%s changes the workload: dangerous: true is required, or k9s --readonly runs it", verb)
				}
				if readOnlyVerbs[verb] && p.Dangerous {
					t.Errorf("%s changes nothing: dangerous: true would hide it from k9s --readonly", verb)
				}
				if !inv.kubeconfig {
					t.Errorf("kubectl workload %s: not given KUBECONFIG=\"$KUBECONFIG\" (k9s started with --kubeconfig does not export it)", verb)
				}
				if len(inv.args) < 2 || inv.args[1] != "$RESOURCE_NAME.$RESOURCE_GROUP" {
					t.Errorf("kubectl workload %v: want the type as $RESOURCE_NAME.$RESOURCE_GROUP, the selected resource with its group", inv.args)
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
	for _, want := range []string{"status", "promote", "pause", "resume", "abort", "kill-instance", "set-partition", "analyze"} {
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
	k, _ := workload.KindFor(scope)
	values := map[string]string{"RESOURCE_NAME": k.Resource.Resource, "RESOURCE_GROUP": k.Resource.Group,
		"NAME": "web", "NAMESPACE": "shop", "CONTEXT": "k9s-context", "KUBECONFIG": os.Getenv("KUBECONFIG")}
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
