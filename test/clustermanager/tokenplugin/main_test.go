package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
)

func execInfo(config string) string {
	info := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false`
	if config != "" {
		info += `,"cluster":{"server":"https://127.0.0.1:1","config":` + config + `}`
	}
	return info + `}}`
}

func TestCredential(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "member-1"), []byte("tok-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := credential(dir, execInfo(`{"clusterName":"member-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got clientauthv1.ExecCredential
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "client.authentication.k8s.io/v1" || got.Kind != "ExecCredential" || got.Status == nil || got.Status.Token != "tok-1" {
		t.Errorf("credential = %s, want an ExecCredential v1 with token tok-1", out)
	}
}

func TestCredentialRefused(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ dir, info, want string }{
		"no token dir":          {"", execInfo(`{"clusterName":"member-1"}`), "--token-dir"},
		"no cluster info":       {dir, execInfo(""), "no spec.cluster.config"},
		"path as a name":        {dir, execInfo(`{"clusterName":"../member-1"}`), "not a cluster name"},
		"hidden file":           {dir, execInfo(`{"clusterName":".member"}`), "not a cluster name"},
		"unknown cluster":       {dir, execInfo(`{"clusterName":"member-9"}`), `no token for cluster "member-9"`},
		"not an ExecCredential": {dir, "not json", "KUBERNETES_EXEC_INFO"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := credential(tc.dir, tc.info)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("credential = %s, %v; want an error with %q", out, err, tc.want)
			}
		})
	}
}
