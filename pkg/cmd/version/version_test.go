package version

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

func TestVersionOutputs(t *testing.T) {
	version.Version, version.GitCommit = "v1.2.3", "abc1234"
	tests := []struct {
		output string
		check  func(t *testing.T, out string)
	}{
		{"", func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "kubectl-workload v1.2.3 (commit abc1234, go") || strings.Count(out, "\n") != 1 {
				t.Errorf("got %q", out)
			}
		}},
		{"json", func(t *testing.T, out string) {
			var info version.Info
			if err := json.Unmarshal([]byte(out), &info); err != nil || info.Version != "v1.2.3" || info.GitCommit != "abc1234" {
				t.Errorf("got %q (%v)", out, err)
			}
		}},
		{"yaml", func(t *testing.T, out string) {
			var info version.Info
			if err := yaml.UnmarshalStrict([]byte(out), &info); err != nil || info.Version != "v1.2.3" {
				t.Errorf("got %q (%v)", out, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run("output="+tt.output, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			cmd := NewCmdVersion(streams)
			cmd.SetArgs([]string{"--output=" + tt.output})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, out.String())
		})
	}
}

func TestVersionRefusesUnknownOutput(t *testing.T) {
	o := &Options{Output: "wide"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), `--output "wide" is not supported: use json or yaml`) {
		t.Fatalf("got %v", err)
	}
}
