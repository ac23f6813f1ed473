package config

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func mustAgent(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := AgentManifests()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if byKind[key] != nil {
			t.Fatalf("%s twice", key)
		}
		byKind[key] = o
	}
	return byKind
}

// decode reads a manifest into its Go type, refusing unknown fields (a typo in a manifest).
func decode(t *testing.T, obj *unstructured.Unstructured, into interface{}) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
		t.Fatalf("%s/%s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

func TestAgentManifests(t *testing.T) {
	objs := mustAgent(t)
	want := []string{"Namespace/workload-system", "ServiceAccount/workload-agent", "ClusterRole/workload-agent",
		"ClusterRoleBinding/workload-agent", "Role/workload-agent-leader-election", "RoleBinding/workload-agent-leader-election",
		"Role/workload-agent-notifications", "RoleBinding/workload-agent-notifications",
		"Service/workload-agent-metrics", "Deployment/workload-agent"}
	if len(objs) != len(want) {
		t.Errorf("got %d objects, want %d", len(objs), len(want))
	}
	for _, w := range want {
		o := objs[w]
		if o == nil {
			t.Fatalf("missing %s", w)
		}
		if o.GetKind() != "Namespace" && !strings.HasPrefix(o.GetKind(), "Cluster") && o.GetNamespace() != AgentNamespace {
			t.Errorf("%s is in namespace %q, want %q", w, o.GetNamespace(), AgentNamespace)
		}
		if o.GetLabels()["app.kubernetes.io/part-of"] != "kubectl-workload" {
			t.Errorf("%s lacks the label app.kubernetes.io/part-of=kubectl-workload (uninstall finds nothing else)", w)
		}
	}

	var d appsv1.Deployment
	decode(t, objs["Deployment/workload-agent"], &d)
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "workload-agent" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, AgentImage+":") {
		t.Errorf("image %q is not %s:<tag>", c.Image, AgentImage)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want non-root, read-only root filesystem, no privilege escalation, all capabilities dropped", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want the RuntimeDefault seccomp profile", psc)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "health" {
			t.Errorf("%s probe %+v: want GET %s on port health", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["health"] != 8081 || ports["metrics"] != 8080 {
		t.Errorf("ports %v: want health 8081, metrics 8080", ports)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--health-addr=:8081", "--metrics-addr=:8080", "--leader-elect=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}

	var svc corev1.Service
	decode(t, objs["Service/workload-agent-metrics"], &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the agent's pods lack", k, v)
		}
	}

	var crb rbacv1.ClusterRoleBinding
	decode(t, objs["ClusterRoleBinding/workload-agent"], &crb)
	if crb.RoleRef.Name != "workload-agent" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "workload-agent" || crb.Subjects[0].Namespace != AgentNamespace {
		t.Errorf("ClusterRoleBinding %+v does not bind the agent's ServiceAccount", crb)
	}
	var role rbacv1.Role
	decode(t, objs["Role/workload-agent-leader-election"], &role)
	if len(role.Rules) != 1 || role.Rules[0].Resources[0] != "leases" {
		t.Errorf("leader election Role %+v", role.Rules)
	}
	var cr rbacv1.ClusterRole
	decode(t, objs["ClusterRole/workload-agent"], &cr)
	for _, r := range cr.Rules {
		for _, v := range r.Verbs {
			if v == "*" {
				t.Errorf("rule %+v grants every verb", r)
			}
		}
		for _, res := range r.Resources {
			if res == "*" || res == "secrets" {
				t.Errorf("rule %+v grants %s", r, res)
			}
		}
	}
	var ns corev1.Namespace
	decode(t, objs["Namespace/workload-system"], &ns)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v: want the restricted Pod Security Standard enforced", ns.Labels)
	}
}

// `kubectl apply -k config/` installs exactly what `kubectl workload install` does.
func TestKustomizationMatchesWhatInstallApplies(t *testing.T) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	for _, r := range m.Resources() {
		built[r.GetKind()+"/"+r.GetName()] = true
	}
	want := map[string]bool{}
	for key := range mustAgent(t) {
		want[key] = true
	}
	for _, crd := range mustCRDs(t) {
		want["CustomResourceDefinition/"+crd.Name] = true
	}
	for key := range want {
		if !built[key] {
			t.Errorf("kustomize build config/ lacks %s", key)
		}
	}
	for key := range built {
		if !want[key] {
			t.Errorf("kustomize build config/ has %s, which install does not apply", key)
		}
	}
}
