// Command tokenplugin is the exec credential plugin (client.authentication.k8s.io/v1) of the
// test's cluster manager (package clustermanager): it prints the bearer token the manager wrote
// for the member cluster that the ClusterProfile names, as a cloud's plugin would fetch one.
//
//	tokenplugin --token-dir DIR
//
// The member's name comes from KUBERNETES_EXEC_INFO: the provider file sets provideClusterInfo and
// the ClusterProfile's access provider carries {"clusterName": NAME} in the cluster's
// client.authentication.k8s.io/exec extension, which client-go hands to the plugin as
// spec.cluster.config. The token is read from DIR/NAME.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
)

func main() {
	tokenDir := flag.String("token-dir", "", "directory of the members' tokens, one file per member name")
	flag.Parse()
	out, err := credential(*tokenDir, os.Getenv("KUBERNETES_EXEC_INFO"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenplugin:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// clusterConfig is the exec extension's data the ClusterProfile carries.
type clusterConfig struct {
	ClusterName string `json:"clusterName"`
}

func credential(tokenDir, execInfo string) ([]byte, error) {
	if tokenDir == "" {
		return nil, errors.New("--token-dir is required")
	}
	var in clientauthv1.ExecCredential
	if err := json.Unmarshal([]byte(execInfo), &in); err != nil {
		return nil, fmt.Errorf("KUBERNETES_EXEC_INFO: %w", err)
	}
	if in.Spec.Cluster == nil || len(in.Spec.Cluster.Config.Raw) == 0 {
		return nil, errors.New("KUBERNETES_EXEC_INFO has no spec.cluster.config: provideClusterInfo must be set and the ClusterProfile must carry the exec extension")
	}
	var cfg clusterConfig
	if err := json.Unmarshal(in.Spec.Cluster.Config.Raw, &cfg); err != nil {
		return nil, fmt.Errorf("spec.cluster.config: %w", err)
	}
	// A name is one path element: a ClusterProfile must not make the plugin read another file.
	if cfg.ClusterName == "" || cfg.ClusterName != filepath.Base(cfg.ClusterName) || strings.HasPrefix(cfg.ClusterName, ".") {
		return nil, fmt.Errorf("spec.cluster.config.clusterName %q is not a cluster name", cfg.ClusterName)
	}
	token, err := os.ReadFile(filepath.Join(tokenDir, cfg.ClusterName))
	if err != nil {
		return nil, fmt.Errorf("no token for cluster %q: %w", cfg.ClusterName, err)
	}
	out := clientauthv1.ExecCredential{
		TypeMeta: in.TypeMeta,
		Status:   &clientauthv1.ExecCredentialStatus{Token: strings.TrimSpace(string(token))},
	}
	out.APIVersion = clientauthv1.SchemeGroupVersion.String()
	out.Kind = "ExecCredential"
	return json.Marshal(out)
}
