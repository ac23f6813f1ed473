package cmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// A kubectl plugin must present itself as `kubectl workload`, not by its binary's name.
func TestHelpPresentsThePluginAsKubectlWorkload(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdWorkload(streams)
	root.SetArgs([]string{"--help"})
	root.SetOut(out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, want := range []string{"kubectl workload [command]", "version", "--namespace", "--context", "--kubeconfig"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "kubectl-workload [command]") {
		t.Errorf("help shows the binary name instead of 'kubectl workload':\n%s", help)
	}
}

func TestUnknownVerbIsAnError(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdWorkload(streams)
	root.SetArgs([]string{"frobnicate"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Fatalf("got %v, want an unknown command error", err)
	}
}
