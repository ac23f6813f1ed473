package rbac

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/config"
	agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

const (
	serviceAccount = "workload-agent"
	agentUser      = "system:serviceaccount:" + agentrbac.Namespace + ":" + serviceAccount
)

type env struct {
	t       *testing.T
	ctx     context.Context
	cluster *localcluster.Cluster
	kube    kubernetes.Interface
	apps    versioned.Interface
	dyn     dynamic.Interface
}

// TestAgentRBAC runs the agent as its ServiceAccount through every controller path, then checks
// the audit log: no request refused, and the permissions used are exactly the granted ones but
// for the allow-list.
func TestAgentRBAC(t *testing.T) {
	ce := e2eenv.Clients(t)
	ctx, cancel := context.WithTimeout(ce.Ctx, 15*time.Minute)
	defer cancel()
	e := &env{t: t, ctx: ctx, cluster: ce.Cluster, kube: ce.Kube, apps: ce.Apps, dyn: ce.Dyn}

	e.installRBAC()
	kubeconfig := e.agentKubeconfig()

	// As deployed: every namespace, leader election in the agent's namespace. Client-go streams
	// the informers' initial lists (WatchListClient); the second agent below lists them the
	// classic way, as against an API server that does not stream lists.
	agent := e.startAgent(kubeconfig)
	t.Run("TApp", e.tappScenario)
	t.Run("TAppVolumeClaims", e.tappVolumeScenario)
	t.Run("TAppForceDeletePod", e.tappForceDeleteScenario)
	t.Run("UnitedDeployment", e.unitedDeploymentScenario)
	t.Run("Canary", e.canaryScenario)
	t.Run("CanaryAnalysis", e.canaryAnalysisScenario)
	t.Run("CanaryTraffic", e.canaryTrafficScenario)                           // traffic_test.go
	t.Run("CanaryBlueGreen", e.canaryBlueGreenScenario)                       // bluegreen_test.go
	t.Run("CanaryBlueGreenTarget", e.canaryBlueGreenTargetScenario)           // bluegreen_test.go
	t.Run("CanaryBlueGreenRoute", e.canaryBlueGreenRouteScenario)             // bluegreen_test.go
	t.Run("CanaryBlueGreenTargetRoute", e.canaryBlueGreenTargetRouteScenario) // bluegreen_test.go
	t.Run("CanaryTarget", e.canaryTargetScenario)
	t.Run("CanaryTargetUnitedDeployment", e.canaryZonesScenario)      // target_uniteddeployment_test.go
	t.Run("CanaryTargetTApp", e.canaryTargetTAppScenario)             // target_tapp_test.go
	t.Run("CanaryDeploymentTarget", e.canaryDeploymentTargetScenario) // deployment_target_test.go
	t.Run("CanaryDaemonSet", e.canaryDaemonSetScenario)               // target_daemonset_test.go
	t.Run("CanaryNotifications", e.canaryNotificationsScenario)       // notifications_test.go
	if err := agent.Stop(); err != nil {
		t.Errorf("stopping the agent: %v", err)
	}
	agent = e.startAgent(kubeconfig, "KUBE_FEATURE_WatchListClient=false")
	if err := agent.Stop(); err != nil {
		t.Errorf("stopping the second agent: %v", err)
	}

	e.checkAudit()
}

// installRBAC applies config/agent, as `kubectl workload install` does, but for the Deployment
// (the agent runs here as a process).
func (e *env) installRBAC() {
	e.t.Helper()
	objs, err := config.AgentManifests()
	if err != nil {
		e.t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.kube.Discovery()))
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			continue
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			e.t.Fatalf("%s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = e.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Create(e.ctx, o, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// agentKubeconfig writes a kubeconfig with a token of the agent's ServiceAccount (TokenRequest
// API), as the agent's pod would get.
func (e *env) agentKubeconfig() string {
	e.t.Helper()
	tr, err := e.kube.CoreV1().ServiceAccounts(agentrbac.Namespace).CreateToken(e.ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: e.cluster.Server, CertificateAuthorityData: e.cluster.CAData}
	cfg.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["agent"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: serviceAccount}
	cfg.CurrentContext = "agent"
	path := filepath.Join(e.t.TempDir(), "agent.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *env) startAgent(kubeconfig string, env ...string) *agentproc.Agent {
	e.t.Helper()
	a := agentproc.Start(e.t, agentproc.Options{
		Kubeconfig: kubeconfig,
		Args:       []string{"--leader-elect-namespace=" + agentrbac.Namespace},
		Env:        env,
	})
	ctx, cancel := context.WithTimeout(e.ctx, e2eenv.Safety)
	defer cancel()
	if err := a.WaitLeading(ctx); err != nil {
		e.t.Fatalf("agent not leading: %v", err)
	}
	return a
}

// checkAudit compares what the agent did with what it is granted.
func (e *env) checkAudit() {
	t := e.t
	t.Helper()
	reqs, nonResource, err := readAudit(filepath.Join(e.cluster.LogDir(), auditLogName))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) == 0 {
		t.Fatal("the audit log has no request of the agent")
	}
	refused := map[string]int{}
	var refusedOrder []string
	for _, r := range reqs {
		if r.code == 403 {
			if refused[r.String()] == 0 {
				refusedOrder = append(refusedOrder, r.String())
			}
			refused[r.String()]++
		}
	}
	for _, r := range refusedOrder {
		t.Errorf("refused %d times: %s", refused[r], r)
	}
	used := usedPermissions(reqs)
	want := map[agentrbac.Key]agentrbac.Permission{}
	for _, p := range agentrbac.Permissions {
		want[p.Key()] = p
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%d requests of the agent; permissions used:\n", len(reqs))
	for _, k := range sortedKeys(used) {
		u := used[k]
		fmt.Fprintf(&report, "  %-70s %5d (namespaced %d, cluster-wide %d) e.g. %s\n", k, u.requests, u.namespaced, u.clusterWide, u.example)
		if _, ok := want[k]; !ok {
			t.Errorf("the agent used %s (e.g. %s), which config/agent.Permissions does not list", k, u.example)
		}
		if reason, ok := allowList[k]; ok {
			t.Errorf("%s is allow-listed (%s) but the test used it: remove it from the allow-list", k, reason)
		}
	}
	for k := range allowList {
		if _, ok := want[k]; !ok {
			t.Errorf("the allow-list names %s, which is not granted", k)
		}
	}
	for _, k := range sortedKeys(want) {
		if used[k] == nil {
			if _, ok := allowList[k]; !ok {
				t.Errorf("%s is granted (%s) but the agent never used it: exercise it here, remove the grant, or allow-list it with the reason", k, want[k].Why)
			}
		}
	}
	uris := make([]string, 0, len(nonResource))
	for u := range nonResource {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	fmt.Fprintf(&report, "non-resource requests (granted to every authenticated user): %s\n", strings.Join(uris, " "))
	t.Log(report.String())
}

// --- helpers -------------------------------------------------------------------------------

func decode[T any](t *testing.T, manifest string) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict([]byte(manifest), out); err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return out
}

func (e *env) namespace(t *testing.T, name string) string {
	t.Helper()
	if _, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// waitFor polls cond until it holds; detail says where things stand when it does not.
func waitFor(t *testing.T, ctx context.Context, what string, cond func(ctx context.Context) (ok bool, detail string)) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("%5.1fs waiting for %s", time.Since(start).Seconds(), what) }()
	e2eenv.WaitFor(t, ctx, what, func(ctx context.Context) (bool, string, error) {
		ok, detail := cond(ctx)
		return ok, detail, nil
	})
}

// waitRollout waits until the workload's rollout, as `kubectl workload status` reads it, is in
// state want.
func (e *env) waitRollout(t *testing.T, k workload.Kind, ns, name string, want workload.RolloutState) {
	t.Helper()
	waitFor(t, e.ctx, fmt.Sprintf("%s/%s to be %s", k.Short, name, want), func(ctx context.Context) (bool, string) {
		obj, err := e.dyn.Resource(k.Resource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st, err := workload.RolloutStatusOf(k, obj)
		if err != nil {
			return false, err.Error()
		}
		return st.State == want, fmt.Sprintf("%s: %s", st.State, st.Summary)
	})
}

func (e *env) patch(t *testing.T, k workload.Kind, ns, name string, pt types.PatchType, patch string) {
	t.Helper()
	if _, err := e.dyn.Resource(k.Resource).Namespace(ns).Patch(e.ctx, name, pt, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching %s/%s with %s: %v", k.Short, name, patch, err)
	}
}

// waitEvent waits for an Event of the agent about the object with the given reason.
func (e *env) waitEvent(t *testing.T, ns, object, reason string) {
	t.Helper()
	e2eenv.WaitEvent(t, e.ctx, e.kube, ns, object, reason)
}

// waitCount waits until n objects of a list match.
func waitCount(t *testing.T, ctx context.Context, what string, n int, count func(ctx context.Context) (int, error)) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("%d %s", n, what), func(ctx context.Context) (bool, string) {
		got, err := count(ctx)
		if err != nil {
			return false, err.Error()
		}
		return got == n, fmt.Sprintf("%d %s", got, what)
	})
}

// owned counts the objects of a resource in ns that uid owns and that are not being deleted.
func (e *env) owned(ns string, gvr schema.GroupVersionResource, uid types.UID) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		list, err := e.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, o := range list.Items {
			if ownedBy(o.GetOwnerReferences(), uid) && o.GetDeletionTimestamp() == nil {
				n++
			}
		}
		return n, nil
	}
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// --- TApp ----------------------------------------------------------------------------------

const tappGS = `
apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata: {name: gs}
spec:
  replicas: 3
  selector: {matchLabels: {app: gs}}
  template:
    metadata: {labels: {app: gs}}
    spec:
      containers: [{name: server, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]
  templatePool:
    blue:
      metadata: {labels: {app: gs, color: blue}}
      spec:
        containers: [{name: server, image: "nginx:1.27"}]
    unused:
      metadata: {labels: {app: gs, color: gray}}
      spec:
        containers: [{name: server, image: "nginx:1.25"}]
  templates: {"2": blue}
  autoDeleteUnusedTemplate: true
`

// tappScenario: create (with a pod name taken by another pod), template prune, scale up and
// down, in-place update, kill and start, delete.
func (e *env) tappScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-tapp")
	pods := e.kube.CoreV1().Pods(ns)
	// A pod of someone else holds instance 0's name: the agent's create fails, it gets the pod
	// to see whose it is, and reports it.
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gs-0", Labels: map[string]string{"squatter": "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	if _, err := pods.Create(e.ctx, squatter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tapps := e.apps.AppsV1alpha1().TApps(ns)
	tapp, err := tapps.Create(e.ctx, decode[v1alpha1.TApp](t, tappGS), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, ns, "gs", "FailedCreate")
	waitFor(t, e.ctx, "templatePool entry unused to be pruned", func(ctx context.Context) (bool, string) {
		got, err := tapps.Get(ctx, "gs", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, left := got.Spec.TemplatePool["unused"]
		return !left, fmt.Sprintf("templatePool %d entries", len(got.Spec.TemplatePool))
	})
	if err := pods.Delete(e.ctx, "gs-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.TApp, ns, "gs", workload.StateComplete)

	countPods := e.owned(ns, corev1.SchemeGroupVersion.WithResource("pods"), tapp.UID)
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType, `{"spec":{"replicas":4}}`)
	e.waitRollout(t, workload.TApp, ns, "gs", workload.StateComplete)
	waitCount(t, e.ctx, "pods of tapp/gs", 4, countPods)
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType, `{"spec":{"replicas":3}}`)
	waitCount(t, e.ctx, "pods of tapp/gs", 3, countPods)

	// In place: pod patch and the readiness gate on pods/status.
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"server","image":"nginx:1.28","resources":{"requests":{"cpu":"100m"}}}]}}}}`)
	e.waitRollout(t, workload.TApp, ns, "gs", workload.StateComplete)
	e.waitEvent(t, ns, "gs", "InPlaceUpdate")

	// Resize in place: pods/resize.
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"server","image":"nginx:1.28","resources":{"requests":{"cpu":"200m"}}}]}}}}`)
	e.waitRollout(t, workload.TApp, ns, "gs", workload.StateComplete)

	// Kill and start instance 1: deleted, then created again under the same name, which repeats
	// the Event "Created pod gs-1 for instance 1" (the recorder patches its count).
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType, `{"spec":{"statuses":{"1":"Killed"}}}`)
	waitCount(t, e.ctx, "pods of tapp/gs", 2, countPods)
	e.patch(t, workload.TApp, ns, "gs", types.MergePatchType, `{"spec":{"statuses":null}}`)
	e.waitRollout(t, workload.TApp, ns, "gs", workload.StateComplete)
	waitCount(t, e.ctx, "pods of tapp/gs", 3, countPods)
	waitFor(t, e.ctx, "the repeated Event to be counted", func(ctx context.Context) (bool, string) {
		list, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=gs,reason=SuccessfulCreate"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.Count > 1 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d SuccessfulCreate events, none counted twice", len(list.Items))
	})

	// Deleting a TApp is the garbage collector's business: the agent makes no call.
	if err := tapps.Delete(e.ctx, "gs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

const tappVol = `
apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata: {name: vol}
spec:
  replicas: 1
  selector: {matchLabels: {app: vol}}
  template:
    metadata: {labels: {app: vol}}
    spec:
      containers:
      - name: server
        image: "nginx:1.27"
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// tappVolumeScenario: a claim of volumeClaimTemplates is created with the pod. (Nothing
// provisions it here, so the pod stays Pending; the calls are what matters.)
func (e *env) tappVolumeScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-tapp-vol")
	if _, err := e.apps.AppsV1alpha1().TApps(ns).Create(e.ctx, decode[v1alpha1.TApp](t, tappVol), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.ctx, "claim data-vol-0 and pod vol-0", func(ctx context.Context) (bool, string) {
		_, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-vol-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, err = e.kube.CoreV1().Pods(ns).Get(ctx, "vol-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

const tappGhost = `
apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata: {name: ghost}
spec:
  replicas: 1
  forceDeletePod: true
  selector: {matchLabels: {app: ghost}}
  template:
    metadata: {labels: {app: ghost}}
    spec:
      nodeName: rbac-node-that-is-gone
      terminationGracePeriodSeconds: 1
      containers: [{name: server, image: "nginx:1.27"}]
`

// tappForceDeleteScenario: a pod bound to a node that is gone never terminates (no kubelet
// confirms it); with forceDeletePod the agent reads the node and force-deletes the pod once its
// grace period is over.
func (e *env) tappForceDeleteScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-tapp-ghost")
	pods := e.kube.CoreV1().Pods(ns)
	if _, err := e.apps.AppsV1alpha1().TApps(ns).Create(e.ctx, decode[v1alpha1.TApp](t, tappGhost), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.ctx, "pod ghost-0", func(ctx context.Context) (bool, string) {
		_, err := pods.Get(ctx, "ghost-0", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	e.patch(t, workload.TApp, ns, "ghost", types.MergePatchType, `{"spec":{"statuses":{"0":"Killed"}}}`)
	e.waitEvent(t, ns, "ghost", "ForceDelete")
	waitFor(t, e.ctx, "pod ghost-0 to be gone", func(ctx context.Context) (bool, string) {
		p, err := pods.Get(ctx, "ghost-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%v, deletionTimestamp %v", err, p.GetDeletionTimestamp())
	})
}

// --- UnitedDeployment ----------------------------------------------------------------------

const udOrders = `
apiVersion: apps.workload.dev/v1alpha1
kind: UnitedDeployment
metadata: {name: orders}
spec:
  replicas: 3
  revisionHistoryLimit: 1
  selector: {matchLabels: {app: orders}}
  template:
    statefulSetTemplate:
      metadata: {labels: {app: orders}}
      spec:
        selector: {matchLabels: {app: orders}}
        podManagementPolicy: Parallel
        template:
          metadata: {labels: {app: orders}}
          spec:
            containers: [{name: orders, image: "nginx:1.27"}]
  topology:
    subsets:
    - name: zone-a
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}
    - name: zone-b
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]}
    - name: zone-c
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-c]}]}
`

const udShards = `
apiVersion: apps.workload.dev/v1alpha1
kind: UnitedDeployment
metadata: {name: shards}
spec:
  replicas: 2
  selector: {matchLabels: {app: shards}}
  template:
    tappTemplate:
      metadata: {labels: {app: shards}}
      spec:
        selector: {matchLabels: {app: shards}}
        template:
          metadata: {labels: {app: shards}}
          spec:
            containers: [{name: shard, image: "nginx:1.27"}]
  topology:
    subsets:
    - name: zone-a
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}
    - name: zone-b
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]}
`

const udFrontend = `
apiVersion: apps.workload.dev/v1alpha1
kind: UnitedDeployment
metadata: {name: frontend}
spec:
  replicas: 2
  selector: {matchLabels: {app: frontend}}
  template:
    deploymentTemplate:
      metadata: {labels: {app: frontend}}
      spec:
        selector: {matchLabels: {app: frontend}}
        template:
          metadata: {labels: {app: frontend}}
          spec:
            containers: [{name: frontend, image: "nginx:1.27"}]
  topology:
    subsets:
    - name: zone-a
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}
    - name: zone-b
      nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]}
`

// unitedDeploymentScenario: subsets of each kind are created, updated and one removed; the
// revision history is created (through a name collision), renumbered and trimmed.
func (e *env) unitedDeploymentScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-ud")
	uds := e.apps.AppsV1alpha1().UnitedDeployments(ns)
	revisions := e.kube.AppsV1().ControllerRevisions(ns)

	// Take the name of orders' first revision with another revision: the agent's create fails
	// with AlreadyExists, it gets the revision, sees other data and counts a collision. The name
	// is the hash of the revision data (revisiondata) of the object as stored, which a
	// server-side dry run returns with every default.
	ud := decode[v1alpha1.UnitedDeployment](t, udOrders)
	dry, err := uds.Create(e.ctx, ud, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := revisiondata.EncodeUnitedDeployment(&dry.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	taken := revision.Name(ud.Name, revision.Hash(data, nil))
	if _, err := revisions.Create(e.ctx, &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: taken},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{}}`)},
		Revision:   1,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orders, err := uds.Create(e.ctx, ud, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.UnitedDeployment, ns, "orders", workload.StateComplete)
	if got, err := uds.Get(e.ctx, "orders", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got.Status.CollisionCount == nil || *got.Status.CollisionCount != 1 {
		t.Errorf("collisionCount %v, want 1: the revision name %s this test computed is not the one the agent used (has revisionData changed?)",
			got.Status.CollisionCount, taken)
	}

	image := func(kind workload.Kind, name, path, container, img string) {
		t.Helper()
		e.patch(t, kind, ns, name, types.JSONPatchType, fmt.Sprintf(
			`[{"op":"test","path":"%s/0/name","value":%q},{"op":"replace","path":"%s/0/image","value":%q}]`, path, container, path, img))
	}
	const stsContainers = "/spec/template/statefulSetTemplate/spec/template/spec/containers"
	// New revision, back to the first one (renumbered), and a third (the oldest one not in use
	// goes: revisionHistoryLimit 1).
	for _, img := range []string{"nginx:1.28", "nginx:1.27", "nginx:1.29"} {
		image(workload.UnitedDeployment, "orders", stsContainers, "orders", img)
		e.waitRollout(t, workload.UnitedDeployment, ns, "orders", workload.StateComplete)
	}
	waitCount(t, e.ctx, "revisions of ud/orders (the current one and revisionHistoryLimit 1)", 2, e.owned(ns, appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), orders.UID))

	waitCount(t, e.ctx, "StatefulSets of ud/orders", 3, e.owned(ns, appsv1.SchemeGroupVersion.WithResource("statefulsets"), orders.UID))
	e.patch(t, workload.UnitedDeployment, ns, "orders", types.JSONPatchType,
		`[{"op":"test","path":"/spec/topology/subsets/2/name","value":"zone-c"},{"op":"remove","path":"/spec/topology/subsets/2"}]`)
	waitCount(t, e.ctx, "StatefulSets of ud/orders", 2, e.owned(ns, appsv1.SchemeGroupVersion.WithResource("statefulsets"), orders.UID))
	e.waitRollout(t, workload.UnitedDeployment, ns, "orders", workload.StateComplete)

	// TApp subsets.
	shards, err := uds.Create(e.ctx, decode[v1alpha1.UnitedDeployment](t, udShards), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.UnitedDeployment, ns, "shards", workload.StateComplete)
	image(workload.UnitedDeployment, "shards", "/spec/template/tappTemplate/spec/template/spec/containers", "shard", "nginx:1.28")
	e.waitRollout(t, workload.UnitedDeployment, ns, "shards", workload.StateComplete)
	e.patch(t, workload.UnitedDeployment, ns, "shards", types.JSONPatchType,
		`[{"op":"test","path":"/spec/topology/subsets/1/name","value":"zone-b"},{"op":"remove","path":"/spec/topology/subsets/1"}]`)
	waitCount(t, e.ctx, "TApps of ud/shards", 1, e.owned(ns, workload.TApp.Resource, shards.UID))
	e.waitRollout(t, workload.UnitedDeployment, ns, "shards", workload.StateComplete)

	// Deployment subsets.
	frontend, err := uds.Create(e.ctx, decode[v1alpha1.UnitedDeployment](t, udFrontend), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.UnitedDeployment, ns, "frontend", workload.StateComplete)
	image(workload.UnitedDeployment, "frontend", "/spec/template/deploymentTemplate/spec/template/spec/containers", "frontend", "nginx:1.28")
	e.waitRollout(t, workload.UnitedDeployment, ns, "frontend", workload.StateComplete)
	e.patch(t, workload.UnitedDeployment, ns, "frontend", types.JSONPatchType,
		`[{"op":"test","path":"/spec/topology/subsets/1/name","value":"zone-b"},{"op":"remove","path":"/spec/topology/subsets/1"}]`)
	waitCount(t, e.ctx, "Deployments of ud/frontend", 1, e.owned(ns, workload.Deployment.Resource, frontend.UID))
	e.waitRollout(t, workload.UnitedDeployment, ns, "frontend", workload.StateComplete)
}

// --- Canary --------------------------------------------------------------------------------

const canaryStable = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: checkout}
spec:
  replicas: 4
  selector: {matchLabels: {app: checkout, track: stable}}
  template:
    metadata: {labels: {app: checkout, track: stable}}
    spec:
      containers: [{name: checkout, image: "nginx:1.26"}]
`

const canaryCheckout = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: checkout}
spec:
  replicas: 4
  stableRef: {name: checkout}
  canary:
    name: checkout-canary
    template:
      metadata: {labels: {app: checkout, track: canary}}
      spec:
        containers: [{name: checkout, image: "nginx:1.27"}]
  batches: 2
  pauseType: First
`

const canaryAnalysis = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: checkout}
spec:
  replicas: 4
  stableRef: {name: checkout}
  canary:
    name: checkout-canary
    template:
      metadata: {labels: {app: checkout, track: canary}}
      spec:
        containers: [{name: checkout, image: "nginx:1.27"}]
  steps:
  - {replicas: 1, analysis: [smoke, health]}
  analysis:
  - name: smoke
    provider:
      job:
        template:
          spec:
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                containers: [{name: smoke, image: "example.com/smoke:job-succeed"}]
  - name: health
    provider: {podHealth: {}}
`

const targetLedger = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ledger}
spec:
  replicas: 2
  serviceName: ledger
  selector: {matchLabels: {app: ledger}}
  template:
    metadata: {labels: {app: ledger}}
    spec:
      containers: [{name: ledger, image: "nginx:1.26"}]
`

const targetCanary = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: ledger}
spec:
  replicas: 2
  targetRef: {kind: StatefulSet, name: ledger}
  steps:
  - {replicas: 1, pause: {}}
`

// canaryTargetScenario: a Canary holds a StatefulSet (partition patches through its named
// watch), releases a new template, is aborted (the stable ControllerRevision read and written
// back) and deleted (the StatefulSet read from the API server and its hold released).
func (e *env) canaryTargetScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-target")
	sets := e.kube.AppsV1().StatefulSets(ns)
	if _, err := sets.Create(e.ctx, decode[appsv1.StatefulSet](t, targetLedger), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.StatefulSet, ns, "ledger", workload.StateComplete)
	canaries := e.apps.AppsV1alpha1().Canaries(ns)
	if _, err := canaries.Create(e.ctx, decode[v1alpha1.Canary](t, targetCanary), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	partition := func(want int32) {
		waitFor(t, e.ctx, fmt.Sprintf("sts/ledger at partition %d", want), func(ctx context.Context) (bool, string) {
			s, err := sets.Get(ctx, "ledger", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ru := s.Spec.UpdateStrategy.RollingUpdate
			return ru != nil && ru.Partition != nil && *ru.Partition == want, fmt.Sprintf("%+v", ru)
		})
	}
	partition(2)
	if _, err := sets.Patch(e.ctx, "ledger", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	partition(1) // step 1, waiting for a promote: it stays there until the abort
	e.patch(t, workload.Canary, ns, "ledger", types.MergePatchType, `{"spec":{"rollback":true}}`)
	e.waitEvent(t, ns, "ledger", v1alpha1.EventTemplateRestored)
	if err := canaries.Delete(e.ctx, "ledger", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	partition(0) // released by the finalizer once the rollback left nothing to release
}

// canaryAnalysisScenario: a step whose checks run a Job (created, then read until it
// finishes) and read the canary's pods from the agent's pod cache; the release completes.
func (e *env) canaryAnalysisScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-analysis")
	if _, err := e.kube.AppsV1().Deployments(ns).Create(e.ctx, decode[appsv1.Deployment](t, canaryStable), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Deployment, ns, "checkout", workload.StateComplete)
	if _, err := e.apps.AppsV1alpha1().Canaries(ns).Create(e.ctx, decode[v1alpha1.Canary](t, canaryAnalysis), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Canary, ns, "checkout", workload.StateComplete)
	e.waitEvent(t, ns, "checkout", v1alpha1.EventAnalysisPassed)
	jobs, err := e.kube.BatchV1().Jobs(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 {
		t.Errorf("%d Jobs, want the smoke check's one", len(jobs.Items))
	}
}

// canaryScenario: a release paused at batch 1, its template changed, promoted to completion,
// rolled back (restoring the stable template changed meanwhile), and deleted (the finalizer
// releases the canary Deployment first).
func (e *env) canaryScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary")
	deployments := e.kube.AppsV1().Deployments(ns)
	if _, err := deployments.Create(e.ctx, decode[appsv1.Deployment](t, canaryStable), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Deployment, ns, "checkout", workload.StateComplete)
	canaries := e.apps.AppsV1alpha1().Canaries(ns)
	if _, err := canaries.Create(e.ctx, decode[v1alpha1.Canary](t, canaryCheckout), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Canary, ns, "checkout", workload.StatePaused)

	// A template change mid-release rewrites the canary Deployment's template (update).
	e.patch(t, workload.Canary, ns, "checkout", types.JSONPatchType,
		`[{"op":"replace","path":"/spec/canary/template/spec/containers/0/image","value":"nginx:1.28"}]`)
	waitFor(t, e.ctx, "the canary Deployment to run nginx:1.28", func(ctx context.Context) (bool, string) {
		d, err := deployments.Get(ctx, "checkout-canary", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		return img == "nginx:1.28", img
	})
	e.waitRollout(t, workload.Canary, ns, "checkout", workload.StatePaused)
	c, err := canaries.Get(e.ctx, "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.patch(t, workload.Canary, ns, "checkout", types.MergePatchType, fmt.Sprintf(`{"spec":{"approvedBatch":%d}}`, workload.WaitingBatch(c)))
	e.waitRollout(t, workload.Canary, ns, "checkout", workload.StateComplete)

	// Someone changed the stable template during the release: rollback restores it (JSON patch)
	// and scales (merge patches).
	if _, err := deployments.Patch(e.ctx, "checkout", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.25"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.patch(t, workload.Canary, ns, "checkout", types.MergePatchType, `{"spec":{"rollback":true}}`)
	waitFor(t, e.ctx, "canary/checkout RolledBack", func(ctx context.Context) (bool, string) {
		c, err := canaries.Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.ObservedGeneration == c.Generation, string(c.Status.Phase) + ": " + c.Status.Message
	})
	e.waitEvent(t, ns, "checkout", "StableTemplateRestored")

	// Deleting the Canary: the finalizer's controller reads the canary Deployment and removes
	// its owner reference, then removes the finalizer.
	if err := canaries.Delete(e.ctx, "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.ctx, "canary/checkout to be gone", func(ctx context.Context) (bool, string) {
		_, err := canaries.Get(ctx, "checkout", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	d, err := deployments.Get(e.ctx, "checkout-canary", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the canary Deployment went with its Canary: %v", err)
	}
	if len(d.OwnerReferences) != 0 {
		t.Errorf("the canary Deployment still has owner references %v", d.OwnerReferences)
	}
}
