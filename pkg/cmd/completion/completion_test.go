package completion_test

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/abort"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/instance"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/set"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/status"
)

// root is a plugin root holding completion and verbs with TYPE/NAME completion (status, and
// mutating verbs), as the real one does.
func root(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	r := &cobra.Command{Use: "kubectl-workload", Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl workload"}}
	r.AddCommand(completion.NewCmdCompletion(streams), status.NewCmdStatus(f, streams),
		promote.NewCmdPromote(f, streams), abort.NewCmdAbort(f, streams), instance.NewCmdKillInstance(f, streams), set.NewCmdSet(f, streams))
	return r
}

func objects() []runtime.Object {
	var objs []runtime.Object
	for _, n := range []string{"web", "worker", "api"} {
		objs = append(objs, &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: cmdtest.Namespace}})
	}
	objs = append(objs, &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}})
	objs = append(objs, &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace}})
	return objs
}

func TestCompletion(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"kubectl-plugin-script", []string{"completion", "kubectl"}},
		{"error-unknown-shell", []string{"completion", "tcsh"}},
		{"error-no-shell", []string{"completion"}},
		{"complete-verbs", []string{"__complete", "st"}},
		{"complete-kinds", []string{"__complete", "status", ""}},
		{"complete-kinds-prefix", []string{"__complete", "status", "t"}},
		{"complete-names-slash", []string{"__complete", "status", "tapp/w"}},
		{"complete-names-type-name-form", []string{"__complete", "status", "tapp", ""}},
		{"complete-names-other-kind", []string{"__complete", "status", "canary/"}},
		{"complete-unknown-kind", []string{"__complete", "status", "pod/"}},
		{"complete-shells", []string{"__complete", "completion", ""}},
		// Mutating verbs complete their own kinds only, then names, then nothing (ids, images).
		{"complete-promote-kinds", []string{"__complete", "promote", ""}},
		{"complete-promote-names", []string{"__complete", "promote", "canary/"}},
		{"complete-abort-refuses-tapp", []string{"__complete", "abort", "tapp/"}},
		{"complete-kill-instance-names", []string{"__complete", "kill-instance", "tapp/w"}},
		{"complete-kill-instance-type-name-form", []string{"__complete", "kill-instance", "tapp", "a"}},
		{"complete-kill-instance-ids", []string{"__complete", "kill-instance", "tapp/web", ""}},
		{"complete-set-image-names", []string{"__complete", "set", "image", "tapp/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, root, objects(), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}

func TestShellScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		res := cmdtest.Run(t, root, nil, "completion", shell)
		if res.Code != 0 || !strings.Contains(res.Out, "kubectl-workload") || len(res.Out) < 1000 {
			t.Errorf("%s: exit %d %s; script:\n%.300s", shell, res.Code, res.Fatal, res.Out)
		}
	}
}

// The script shipped in the release archives is the one `completion kubectl` prints.
func TestShippedPluginCompletionScripts(t *testing.T) {
	data, err := os.ReadFile("../../../hack/kubectl_complete-workload")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != completion.PluginCompletionScript {
		t.Errorf("hack/kubectl_complete-workload differs from completion.PluginCompletionScript:\n%s", data)
	}
	info, err := os.Stat("../../../hack/kubectl_complete-workload")
	if err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("hack/kubectl_complete-workload must be executable: %v %v", info.Mode(), err)
	}
	cmd, err := os.ReadFile("../../../hack/kubectl_complete-workload.cmd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmd), "kubectl-workload.exe __complete %*") {
		t.Errorf("hack/kubectl_complete-workload.cmd does not call kubectl-workload.exe __complete:\n%s", cmd)
	}
}

// completion --help reads as kubectl's own completion help: every command to type stands on a
// line of its own, none run together into a paragraph, and no markup is left over.
func TestCompletionHelpKeepsCommandsOnTheirLines(t *testing.T) {
	res := cmdtest.Run(t, root, objects(), "completion", "--help")
	lines := map[string]bool{}
	for _, l := range strings.Split(res.Out, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"kubectl workload completion kubectl > ~/.local/bin/kubectl_complete-workload",
		"chmod +x ~/.local/bin/kubectl_complete-workload",
		"source <(kubectl-workload completion bash)",
		"source <(kubectl-workload completion zsh)",
		"kubectl-workload completion fish | source",
		"kubectl-workload completion powershell | Out-String | Invoke-Expression",
	} {
		if !lines[want] {
			t.Errorf("completion --help has no line %q:\n%s", want, res.Out)
		}
	}
	if strings.Contains(res.Out, "<TAB>") || strings.Contains(res.Out, "**") {
		t.Errorf("completion --help shows markup:\n%s", res.Out)
	}
}
