package pause

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

func objects(paused bool) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace}
	}
	tapp := &v1alpha1.TApp{ObjectMeta: meta("web")}
	tapp.Spec.Replicas = ptr.To[int32](3)
	tapp.Spec.UpdateStrategy.Partition = ptr.To[int32](1)
	tapp.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	tapp.Spec.UpdateStrategy.Paused = paused
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders")}
	ud.Spec.UpdateStrategy.Paused = paused
	canary := &v1alpha1.Canary{ObjectMeta: meta("checkout")}
	canary.Spec.Paused = paused
	deploy := &appsv1.Deployment{ObjectMeta: meta("front")}
	deploy.Spec.Paused = paused
	sts := &appsv1.StatefulSet{ObjectMeta: meta("db")}
	return []runtime.Object{tapp, ud, canary, deploy, sts}
}

func TestPauseAndResume(t *testing.T) {
	tests := []struct {
		name   string
		resume bool
		paused bool // the objects' state before the command
		args   []string
	}{
		{"pause-tapp", false, false, []string{"tapp/web"}},
		{"pause-type-name-form", false, false, []string{"tapp", "web"}},
		{"pause-uniteddeployment", false, false, []string{"ud/orders"}},
		{"pause-canary", false, false, []string{"canary/checkout"}},
		{"pause-deployment", false, false, []string{"deployment/front"}},
		{"pause-already-paused", false, true, []string{"tapp/web"}},
		{"pause-dry-run-client", false, false, []string{"ud/orders", "--dry-run=client"}},
		{"pause-dry-run-server", false, false, []string{"canary/checkout", "--dry-run=server"}},
		{"resume-tapp", true, true, []string{"tapp/web"}},
		{"resume-canary", true, true, []string{"canary", "checkout"}},
		{"resume-not-paused", true, false, []string{"deploy/front"}},
		{"error-statefulset", false, false, []string{"sts/db"}},
		{"error-missing", false, false, []string{"tapp/nope"}},
		{"error-unknown-type", false, false, []string{"pod/web"}},
		{"error-no-args", false, false, nil},
		{"error-type-without-name", false, false, []string{"tapp"}},
		{"error-extra-args", false, false, []string{"tapp/web", "tapp/other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newCmd := NewCmdPause
			if tt.resume {
				newCmd = NewCmdResume
			}
			res := cmdtest.Run(t, newCmd, objects(tt.paused), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}

// The switch is really flipped in the stored object, and nothing else in it changes.
func TestPauseChangesOnlyTheSwitch(t *testing.T) {
	res := cmdtest.Run(t, NewCmdPause, objects(false), "tapp/web")
	obj := res.Stored(t, v1alpha1.SchemeGroupVersion.WithResource("tapps"), "web")
	var got v1alpha1.TApp
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got); err != nil {
		t.Fatal(err)
	}
	// The whole spec, not a few fields: a patch that touched anything else must fail here.
	want := objects(false)[0].(*v1alpha1.TApp)
	want.Spec.UpdateStrategy.Paused = true
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("stored spec %+v, want %+v", got.Spec, want.Spec)
	}
}
