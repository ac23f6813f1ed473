package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/test/clustermanager"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// TestControlPlanesAreSeparate: one etcd, clusters that see nothing of each other, a hub
// without nodes and members whose nodes are Ready and whose API serves the project's CRDs.
func TestControlPlanesAreSeparate(t *testing.T) {
	f, _ := fleet(t)
	ctx := t.Context()
	hub := kube(t, f.Hub)
	if nodes, err := hub.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil || len(nodes.Items) != 0 {
		t.Fatalf("hub nodes: %d, %v; want none", len(nodes.Items), err)
	}
	servers := map[string]string{"hub": f.Hub.Server}
	for _, name := range f.Names {
		m := f.Member(name)
		if m.EtcdURL() != f.Hub.EtcdURL() {
			t.Errorf("%s stores in %s, not the hub's etcd %s", name, m.EtcdURL(), f.Hub.EtcdURL())
		}
		for other, server := range servers {
			if server == m.Server {
				t.Errorf("%s and %s share the API server %s", name, other, server)
			}
		}
		servers[name] = m.Server
		cs := kube(t, m)
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != len(m.Nodes) {
			t.Fatalf("%s nodes: %v, %v; want %d", name, nodes, err, len(m.Nodes))
		}
		if _, err := cs.Discovery().ServerResourcesForGroupVersion("apps.workload.dev/v1alpha1"); err != nil {
			t.Errorf("%s does not serve the project's CRDs: %v", name, err)
		}
	}

	// An object written in one member is in no other cluster.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "only-in-member-1-"}}
	cm, err := kube(t, f.Member(members[0])).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]kubernetes.Interface{"hub": hub, members[1]: kube(t, f.Member(members[1]))} {
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s of %s is seen in %s: %v", cm.Name, members[0], name, err)
		}
	}
	t.Logf("fleet started in %s", f.StartTime.Round(100*time.Millisecond))
}

// TestMemberThroughClusterProfile: a member's client built as the agent builds it (its
// ClusterProfile, the provider file, pkg/access, the exec plugin) acts as the member's
// namespace-scoped identity: it may manage the workloads of a granted namespace and nothing else.
func TestMemberThroughClusterProfile(t *testing.T) {
	f, mgr := fleet(t)
	ctx := t.Context()
	for _, name := range f.Names {
		t.Run(name, func(t *testing.T) {
			cfg, err := mgr.RESTConfig(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != f.Member(name).Server || cfg.ExecProvider == nil || cfg.BearerToken != "" {
				t.Fatalf("config from the ClusterProfile: host %s, exec %v, static token %t; want %s through the plugin",
					cfg.Host, cfg.ExecProvider, cfg.BearerToken != "", f.Member(name).Server)
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := "system:serviceaccount:" + clustermanager.IdentityNamespace + ":" + clustermanager.IdentityName
			if got := review.Status.UserInfo.Username; got != want {
				t.Errorf("the plugin's identity is %q, want %q", got, want)
			}

			granted, other := "granted-"+name, "not-granted"
			if err := mgr.Grant(ctx, f.Member(name), granted); err != nil {
				t.Fatal(err)
			}
			admin := kube(t, f.Member(name))
			if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			d := deployment("through-profile")
			if _, err := cs.AppsV1().Deployments(granted).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Errorf("create a Deployment in the granted namespace: %v", err)
			}
			if _, err := cs.AppsV1().Deployments(other).Create(ctx, d, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("create a Deployment in %s: %v, want Forbidden", other, err)
			}
			if _, err := cs.CoreV1().Secrets(granted).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("list Secrets: %v, want Forbidden", err)
			}
			if _, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("list Deployments cluster-wide: %v, want Forbidden", err)
			}
		})
	}
}

// TestMemberAPIServerRestart: a member's API server stopped refuses its clients, and started
// again serves the same objects (its data stays in the shared etcd) to the same client.
func TestMemberAPIServerRestart(t *testing.T) {
	f, mgr := fleet(t)
	ctx := t.Context()
	name := members[1]
	m := f.Member(name)
	cfg, err := mgr.RESTConfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "restart"
	if err := mgr.Grant(ctx, m, ns); err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("kept"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := time.Now()
	if err := m.StopComponents(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s's API server stopped in %s", name, time.Since(stop).Round(100*time.Millisecond))
	if _, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatalf("%s answered with its API server stopped", name)
	}
	// The other member and the hub are not affected.
	if _, err := kube(t, f.Member(members[0])).Discovery().ServerVersion(); err != nil {
		t.Errorf("%s with %s down: %v", members[0], name, err)
	}
	start := time.Now()
	if err := m.StartComponents(ctx, localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s's API server back in %s", name, time.Since(start).Round(100*time.Millisecond))
	e2eenv.WaitFor(t, ctx, name+"'s Deployment through the restarted API server", func(ctx context.Context) (bool, string, error) {
		// The member Role lists, it does not get.
		list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + d.Name})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(list.Items) == 1 && list.Items[0].UID == d.UID, fmt.Sprintf("%d listed", len(list.Items)), nil
	})
}

func kube(t *testing.T, c *localcluster.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}},
			},
		},
	}
}
