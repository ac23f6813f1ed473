package clustermanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

const (
	// IdentityNamespace and IdentityName are the member's ServiceAccount the hub's agent acts as.
	IdentityNamespace = "kubectl-workload-fleet"
	IdentityName      = "hub-agent"
)

// MemberRoleFile is the Role the project ships for the agent's identity in a member, which Grant
// binds: the tests then prove that what it grants is enough, and that nothing more is granted.
var MemberRoleFile = filepath.Join("config", "rbac", "member-role.yaml")

// memberRole reads MemberRoleFile from the repository.
func memberRole() (*rbacv1.Role, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, MemberRoleFile))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, fmt.Errorf("%s: %w", MemberRoleFile, err)
	}
	if role.Kind != "Role" || role.Name == "" || len(role.Rules) == 0 {
		return nil, fmt.Errorf("%s: not a named Role with rules", MemberRoleFile)
	}
	return role, nil
}

// Register makes member a cluster of the fleet under name: its identity (a ServiceAccount
// granted the member Role in each of namespaces, created when missing), that identity's token where
// the plugin reads it, and its ClusterProfile on the hub, ControlPlaneHealthy.
func (m *Manager) Register(ctx context.Context, name string, member *localcluster.Cluster, namespaces ...string) error {
	kube, err := member.Clientset()
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, kube, IdentityNamespace); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: IdentityName, Namespace: IdentityNamespace}}
	if _, err := kube.CoreV1().ServiceAccounts(IdentityNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, ns := range namespaces {
		if err := m.grant(ctx, kube, ns); err != nil {
			return err
		}
	}
	expiry := int64(24 * 60 * 60)
	tr, err := kube.CoreV1().ServiceAccounts(IdentityNamespace).CreateToken(ctx, IdentityName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of %s in %s: %w", IdentityName, name, err)
	}
	if err := os.WriteFile(filepath.Join(m.tokenDir, name), []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	cp, err := profile(name, member.Server, member.CAData, true)
	if err != nil {
		return err
	}
	u, err := toUnstructured(cp)
	if err != nil {
		return err
	}
	created, err := m.hub.Resource(ClusterProfiles).Namespace(Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ClusterProfile %s: %w", name, err)
	}
	// status is a subresource: what Create carried of it was dropped.
	u.SetResourceVersion(created.GetResourceVersion())
	_, err = m.hub.Resource(ClusterProfiles).Namespace(Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// Grant gives the member's identity the member Role in namespace (created when missing), e.g. the
// namespace of a test's UnitedDeployment, whose subset workloads land in the same namespace.
func (m *Manager) Grant(ctx context.Context, member *localcluster.Cluster, namespace string) error {
	kube, err := member.Clientset()
	if err != nil {
		return err
	}
	return m.grant(ctx, kube, namespace)
}

func (m *Manager) grant(ctx context.Context, kube kubernetes.Interface, ns string) error {
	if err := ensureNamespace(ctx, kube, ns); err != nil {
		return err
	}
	roleName := m.role.Name
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns, Labels: m.role.Labels}, Rules: m.role.Rules}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: IdentityName, Namespace: IdentityNamespace}},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func ensureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// SetControlPlaneHealthy writes the member's ControlPlaneHealthy condition, as a cluster manager
// does when its probe of the member changes.
func (m *Manager) SetControlPlaneHealthy(ctx context.Context, name string, healthy bool, message string) error {
	cp, err := m.Get(ctx, name)
	if err != nil {
		return err
	}
	reason := "Probed"
	if !healthy {
		reason = "Unreachable"
	}
	setHealthy(cp, healthy, reason, message)
	u, err := toUnstructured(cp)
	if err != nil {
		return err
	}
	_, err = m.hub.Resource(ClusterProfiles).Namespace(Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// Unregister deletes the member's ClusterProfile, as a cluster manager does when a cluster
// leaves the fleet; the member and its identity stay.
func (m *Manager) Unregister(ctx context.Context, name string) error {
	return m.hub.Resource(ClusterProfiles).Namespace(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: u}, nil
}
