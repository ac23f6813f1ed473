package set

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, Generation: 4}
}

func template(images ...string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}}
	for i := 0; i < len(images); i += 2 {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: images[i], Image: images[i+1]})
	}
	return t
}

func objects() []runtime.Object {
	web := &v1alpha1.TApp{ObjectMeta: meta("web")}
	web.Annotations = map[string]string{"team": "games"}
	web.Spec.Template = template("app", "nginx:1.24", "log", "fluent:1")
	web.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1"}}
	web.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"canary": template("app", "nginx:1.25"), "blue": template("app", "nginx:1.23")}
	plain := &v1alpha1.TApp{ObjectMeta: meta("plain")}
	plain.Spec.Template = template("app", "nginx:1.24")
	pooled := &v1alpha1.TApp{ObjectMeta: meta("pooled")}
	pooled.Spec.Template = template("app", "nginx:1.24")
	pooled.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": template("app", "nginx:1.20")}
	pooled.Spec.DefaultTemplateName = "blue"

	orders := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders")}
	orders.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{Template: template("app", "orders:1")}}
	games := &v1alpha1.UnitedDeployment{ObjectMeta: meta("games")}
	games.Spec.Template.TAppTemplate = &v1alpha1.TAppTemplateSpec{Spec: v1alpha1.TAppSpec{Template: template("app", "games:1", "log", "fluent:1")}}

	checkout := &v1alpha1.Canary{ObjectMeta: meta("checkout")}
	checkout.Spec.StableRef.Name = "checkout-stable"
	checkout.Spec.Canary.Name = "checkout-canary"
	checkout.Spec.Canary.Template = template("app", "shop:1")

	ledger := &v1alpha1.Canary{ObjectMeta: meta("ledger")}
	ledger.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: "db"}

	front := &appsv1.Deployment{ObjectMeta: meta("front")}
	front.Spec.Template = template("nginx", "nginx:1.24", "sidecar", "envoy:1")
	db := &appsv1.StatefulSet{ObjectMeta: meta("db")}
	db.Spec.Template = template("postgres", "postgres:15")
	db.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init-db", Image: "postgres:15"}}
	held := &appsv1.Deployment{ObjectMeta: meta("checkout-stable")}
	held.Spec.Template = template("app", "shop:1")
	arcade := &v1alpha1.TApp{ObjectMeta: meta("arcade")}
	arcade.Spec.Template = template("app", "arcade:1")
	arcadeCanary := &v1alpha1.Canary{ObjectMeta: meta("arcade")}
	arcadeCanary.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "arcade"}

	// Canary shelf releases Deployment shelf through its temporary canary shelf-canary.
	shelf := &v1alpha1.Canary{ObjectMeta: meta("shelf")}
	shelf.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "shelf"}
	shelfDeploy := &appsv1.Deployment{ObjectMeta: meta("shelf")}
	shelfDeploy.Spec.Paused = true
	shelfDeploy.Spec.Template = template("app", "shelf:1")
	shelfCanary := &appsv1.Deployment{ObjectMeta: meta("shelf-canary")}
	shelfCanary.Spec.Template = template("app", "shelf:2")

	// DaemonSet agents rolls by itself; Canary logs holds DaemonSet logs.
	agents := &appsv1.DaemonSet{ObjectMeta: meta("agents")}
	agents.Spec.Template = template("fluentd", "fluentd:1.16")
	logs := &appsv1.DaemonSet{ObjectMeta: meta("logs")}
	logs.Annotations = map[string]string{v1alpha1.AnnotationDaemonSetPartition: "3"}
	logs.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	logs.Spec.Template = template("vector", "vector:0.40")
	logsCanary := &v1alpha1.Canary{ObjectMeta: meta("logs")}
	logsCanary.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "logs"}
	return []runtime.Object{web, plain, pooled, orders, games, checkout, ledger, front, db, held, arcade, arcadeCanary, shelf, shelfDeploy, shelfCanary,
		agents, logs, logsCanary}
}

func TestSetImage(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		unchanged bool // succeeds without changing anything
	}{
		{"tapp", []string{"tapp/web", "app=nginx:1.26"}, false},
		{"tapp-type-name-form", []string{"tapp", "web", "app=nginx:1.26"}, false},
		{"tapp-two-containers", []string{"tapp/web", "log=fluent:2", "app=nginx:1.26"}, false},
		{"tapp-init-container", []string{"tapp/web", "setup=busybox:2"}, false},
		{"tapp-every-container", []string{"tapp/web", "*=nginx:1.26"}, false},
		{"tapp-star-then-one", []string{"tapp/web", "*=nginx:1.26", "log=fluent:2"}, false},
		{"tapp-template-pool", []string{"tapp/web", "app=nginx:1.26", "--template", "canary"}, false},
		{"tapp-default-template-name", []string{"tapp/pooled", "app=nginx:1.21"}, false},
		{"tapp-without-annotations", []string{"tapp/plain", "app=nginx:1.26"}, false},
		{"tapp-already", []string{"tapp/web", "app=nginx:1.24"}, true},
		{"tapp-some-already", []string{"tapp/web", "app=nginx:1.24", "log=fluent:2"}, false},
		{"ud-statefulset-subsets", []string{"ud/orders", "app=orders:2"}, false},
		{"ud-tapp-subsets", []string{"ud/games", "*=games:2"}, false},
		{"canary", []string{"canary/checkout", "app=shop:2"}, false},
		{"deployment", []string{"deploy/front", "nginx=nginx:1.26"}, false},
		{"deployment-every-container", []string{"deployment/front", "*=nginx:1.26"}, false},
		{"statefulset-with-init-container", []string{"sts/db", "*=postgres:16"}, false},
		{"statefulset-already", []string{"sts/db", "postgres=postgres:15"}, true},
		{"dry-run-client", []string{"tapp/plain", "app=nginx:1.26", "--dry-run=client"}, true},
		{"dry-run-server", []string{"deploy/front", "sidecar=envoy:2", "--dry-run=server"}, false},
		{"error-deployment-held-by-canary", []string{"deploy/checkout-stable", "app=shop:2"}, false},
		{"error-canary-with-target", []string{"canary/ledger", "postgres=postgres:16"}, false},
		{"statefulset-released-by-canary", []string{"sts/db", "postgres=postgres:16"}, false},
		{"tapp-released-by-canary", []string{"tapp/arcade", "app=arcade:2"}, false},
		{"deployment-released-by-canary", []string{"deploy/shelf", "app=shelf:2"}, false},
		{"daemonset", []string{"ds/agents", "fluentd=fluentd:1.17"}, false},
		{"daemonset-dry-run-client", []string{"daemonsets/agents", "fluentd=fluentd:1.17", "--dry-run=client"}, true},
		{"daemonset-dry-run-server", []string{"ds/agents", "*=fluentd:1.17", "--dry-run=server"}, false},
		{"daemonset-released-by-canary", []string{"ds/logs", "vector=vector:0.41"}, false},
		{"error-canary-with-daemonset-target", []string{"canary/logs", "vector=vector:0.41"}, false},
		{"error-temporary-canary-deployment", []string{"deploy/shelf-canary", "app=shelf:3"}, false},
		{"error-unknown-container", []string{"tapp/web", "app=nginx:1.26", "db=postgres:16"}, false},
		{"error-unknown-container-in-pool", []string{"tapp/web", "log=fluent:2", "--template", "canary"}, false},
		{"error-unknown-container-deployment", []string{"deploy/front", "web=nginx:1.26"}, false},
		{"error-unknown-pool-template", []string{"tapp/web", "app=nginx:1.26", "--template", "green"}, false},
		{"error-pool-template-empty-pool", []string{"tapp/plain", "app=nginx:1.26", "--template", "green"}, false},
		{"error-template-flag-on-deployment", []string{"deploy/front", "nginx=nginx:1.26", "--template", "canary"}, false},
		{"error-no-assignment", []string{"tapp/web"}, false},
		{"error-not-an-assignment", []string{"tapp/web", "nginx:1.26"}, false},
		{"error-empty-image", []string{"tapp/web", "app="}, false},
		{"error-missing", []string{"canary/nope", "app=shop:2"}, false},
		{"error-unknown-type", []string{"pod/web", "app=shop:2"}, false},
		{"error-no-args", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdSet, objects(), append([]string{"image"}, tt.args...)...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			if res.Code != 0 || tt.unchanged {
				cmdtest.AssertUnchanged(t, res, objects())
			}
		})
	}
}

// Like `kubectl set`, `set` alone prints its help (to stderr) and exits 1; it sends nothing.
func TestSetWithoutSubcommandShowsHelp(t *testing.T) {
	res := cmdtest.Run(t, NewCmdSet, objects())
	if res.Code != 1 || len(res.Actions) != 0 || !strings.Contains(res.ErrOut, "image") {
		t.Errorf("exit %d, actions %v, stderr %q", res.Code, res.Actions, res.ErrOut)
	}
}

// The stored TApp runs the new image; nothing else changes (the TApp controller records the
// history).
func TestSetImageStoredTApp(t *testing.T) {
	res := cmdtest.Run(t, NewCmdSet, objects(), "image", "tapp/web", "log=fluent:2")
	obj := res.Stored(t, workload.TApp.Resource, "web")
	got, err := workload.AsTApp(obj)
	if err != nil {
		t.Fatal(err)
	}
	before := objects()[0].(*v1alpha1.TApp)
	want := before.Spec.Template.DeepCopy()
	want.Spec.Containers[1].Image = "fluent:2"
	if gotJSON, wantJSON := mustJSON(t, got.Spec.Template), mustJSON(t, want); gotJSON != wantJSON {
		t.Errorf("stored template\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if mustJSON(t, got.Annotations) != mustJSON(t, before.Annotations) {
		t.Errorf("annotations %v, want them untouched (%v): the controller keeps the history", got.Annotations, before.Annotations)
	}
	if got.Annotations["team"] != "games" {
		t.Errorf("other annotations lost: %v", got.Annotations)
	}
	if mustJSON(t, got.Spec.TemplatePool) != mustJSON(t, before.Spec.TemplatePool) {
		t.Error("templatePool changed")
	}
}

func mustJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
