// Package clustermanager plays a fleet's cluster manager (Open Cluster Management, KubeFleet, GKE
// Fleet) in tests: it publishes a ClusterProfile per member cluster on the hub
// (sigs.k8s.io/cluster-inventory-api), gives each member a namespace-scoped identity whose token
// an exec credential plugin (tokenplugin) prints, and writes the provider file the agent reads
// (--clusterprofile-provider-file, the format of the module's pkg/access). The agent then reaches
// a member exactly as it would under a real cluster manager: through pkg/access and the plugin.
package clustermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	clusterv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

const (
	// Name is the cluster manager's name: the ClusterProfiles' spec.clusterManager.name and their
	// x-k8s.io/cluster-manager label.
	Name = "kubectl-workload-test"
	// ProviderName is the access provider the ClusterProfiles list and the provider file
	// configures.
	ProviderName = "kubectl-workload-test-token"
	// Namespace is where the ClusterProfiles live on the hub.
	Namespace = "fleet-system"
	// execExtension is the cluster extension client-go hands to an exec plugin as
	// spec.cluster.config (SIG Auth's reserved key).
	execExtension = "client.authentication.k8s.io/exec"
)

// ClusterProfiles is the ClusterProfile resource.
var ClusterProfiles = clusterv1alpha1.GroupVersion.WithResource("clusterprofiles")

// Manager is the cluster manager of one hub.
type Manager struct {
	// ProviderFile is the provider file to give the agent as --clusterprofile-provider-file.
	ProviderFile string

	hub      dynamic.Interface
	role     *rbacv1.Role // granted in the members
	dir      string
	tokenDir string
}

// New installs the ClusterProfile CRD of the pinned module on the hub, builds the credential
// plugin into dir and writes the provider file there. dir must outlive the tests that use the
// members (the plugin and the tokens are read at every new connection).
func New(ctx context.Context, hub *localcluster.Cluster, dir string) (*Manager, error) {
	crds, err := localcluster.ClusterInventoryCRDDir(ctx)
	if err != nil {
		return nil, err
	}
	if err := hub.InstallCRDs(ctx, crds); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(hub.RESTConfig())
	if err != nil {
		return nil, err
	}
	role, err := memberRole()
	if err != nil {
		return nil, err
	}
	m := &Manager{hub: dyn, role: role, dir: dir, tokenDir: filepath.Join(dir, "tokens"), ProviderFile: filepath.Join(dir, "clusterprofile-provider-file.json")}
	if err := os.MkdirAll(m.tokenDir, 0o700); err != nil {
		return nil, err
	}
	plugin := filepath.Join(dir, "tokenplugin")
	if err := buildPlugin(ctx, plugin); err != nil {
		return nil, err
	}
	if err := writeProviderFile(m.ProviderFile, plugin, m.tokenDir); err != nil {
		return nil, err
	}
	kube, err := hub.Clientset()
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, kube, Namespace); err != nil {
		return nil, err
	}
	return m, nil
}

func buildPlugin(ctx context.Context, out string) error {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./test/clustermanager/tokenplugin")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the credential plugin: %w\n%s", err, b)
	}
	return nil
}

// writeProviderFile writes the pkg/access provider file: one provider whose exec plugin reads
// the token of the cluster the ClusterProfile names (provideClusterInfo passes that name).
func writeProviderFile(path, plugin, tokenDir string) error {
	cfg := access.Config{Providers: []access.Provider{{
		Name: ProviderName,
		ExecConfig: &clientcmdapi.ExecConfig{
			APIVersion:         "client.authentication.k8s.io/v1",
			Command:            plugin,
			Args:               []string{"--token-dir", tokenDir},
			ProvideClusterInfo: true,
			InteractiveMode:    clientcmdapi.NeverExecInteractiveMode,
		},
	}}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// profile is the ClusterProfile of a member reachable at server with the CA caData.
func profile(name, server string, caData []byte, healthy bool) (*clusterv1alpha1.ClusterProfile, error) {
	ext, err := json.Marshal(map[string]string{"clusterName": name})
	if err != nil {
		return nil, err
	}
	cp := &clusterv1alpha1.ClusterProfile{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: clusterv1alpha1.ClusterProfileKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace,
			Labels: map[string]string{clusterv1alpha1.LabelClusterManagerKey: Name},
		},
		Spec: clusterv1alpha1.ClusterProfileSpec{DisplayName: name, ClusterManager: clusterv1alpha1.ClusterManager{Name: Name}},
	}
	cp.Status.AccessProviders = []clusterv1alpha1.AccessProvider{{Name: ProviderName}}
	cluster := &cp.Status.AccessProviders[0].Cluster
	cluster.Server, cluster.CertificateAuthorityData = server, caData
	cluster.Extensions = append(cluster.Extensions, namedExtension(execExtension, ext))
	setHealthy(cp, healthy, "Probed", "the test's cluster manager set it")
	return cp, nil
}

func setHealthy(cp *clusterv1alpha1.ClusterProfile, healthy bool, reason, message string) {
	status := metav1.ConditionFalse
	if healthy {
		status = metav1.ConditionTrue
	}
	for i := range cp.Status.Conditions {
		c := &cp.Status.Conditions[i]
		if c.Type == clusterv1alpha1.ClusterConditionControlPlaneHealthy {
			if c.Status != status {
				c.LastTransitionTime = metav1.Now()
			}
			c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, message, cp.Generation
			return
		}
	}
	cp.Status.Conditions = append(cp.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionControlPlaneHealthy, Status: status, Reason: reason,
		Message: message, LastTransitionTime: metav1.Now(), ObservedGeneration: cp.Generation,
	})
}

// Get returns a member's ClusterProfile as the hub has it.
func (m *Manager) Get(ctx context.Context, name string) (*clusterv1alpha1.ClusterProfile, error) {
	u, err := m.hub.Resource(ClusterProfiles).Namespace(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cp := &clusterv1alpha1.ClusterProfile{}
	return cp, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cp)
}

// RESTConfig builds a member's client configuration from its ClusterProfile through pkg/access
// and the provider file, as the agent does.
func (m *Manager) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	cp, err := m.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, err := access.NewFromFile(m.ProviderFile)
	if err != nil {
		return nil, err
	}
	return cfg.BuildConfigFromCP(cp)
}

func namedExtension(name string, raw []byte) clientcmdv1.NamedExtension {
	return clientcmdv1.NamedExtension{Name: name, Extension: runtime.RawExtension{Raw: raw}}
}
