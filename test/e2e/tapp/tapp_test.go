package tapp

import (
	"fmt"
	"testing"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"k8s.io/utils/ptr"
)

func TestScale(t *testing.T) {
	e := setup(t)
	e.startAgent()
	e.create(newTApp("web", 0))
	for _, n := range []int{0, 20, 5, 20} {
		e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Replicas = ptr.To(int32(n)) })
		pods := e.waitSettled("web", n)
		for name, p := range pods {
			if p.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent {
				t.Errorf("%s: labels %v", name, p.Labels)
			}
		}
		t.Logf("settled at %d", n)
	}
	st := e.get("web").Status
	if st.ScaleLabelSelector != "app=web" || st.AppStatus != appsv1alpha1.AppRunning || len(st.Statuses) != 20 {
		t.Errorf("status: selector %q app %s statuses %d", st.ScaleLabelSelector, st.AppStatus, len(st.Statuses))
	}
	for i := 0; i < 20; i++ {
		if s := st.Statuses[fmt.Sprint(i)]; s != appsv1alpha1.InstanceRunningNow {
			t.Errorf("statuses[%d] = %s", i, s)
		}
	}
}
