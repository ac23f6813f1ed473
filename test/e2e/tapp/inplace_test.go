package tapp

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
)

func gateCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == appsv1alpha1.ConditionInPlaceUpdateReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// The image patch of an in-place update comes at least gracePeriodSeconds after the readiness
// gate went False: a watch sees each pod's first version with the new image, and that version's
// gate condition must be False since at least the grace period (a late watch event only makes
// the measured gap longer, never shorter).
func TestInPlaceGracePeriodBeforeImagePatch(t *testing.T) {
	e := setup(t)
	e.startAgent()
	const grace = 3 * time.Second
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.GracePeriodSeconds = int32(grace / time.Second)
	e.create(tp)
	before := e.waitSettled("web", 2)

	patched := map[types.UID]time.Duration{}
	w := e.WatchPods("grace period", appsv1alpha1.LabelTAppName+"=web", func(pods map[types.UID]*corev1.Pod) []string {
		var out []string
		for uid, p := range pods {
			if _, ok := patched[uid]; ok || p.Spec.Containers[0].Image != "registry.invalid/app:v2" {
				continue
			}
			c := gateCondition(p)
			if c == nil || c.Status != corev1.ConditionFalse {
				patched[uid] = 0
				out = append(out, fmt.Sprintf("%s: image patched while the gate is %v", p.Name, c))
				continue
			}
			patched[uid] = time.Since(c.LastTransitionTime.Time)
			if patched[uid] < grace {
				out = append(out, fmt.Sprintf("%s: image patched %v after the gate went False, grace period %v", p.Name, patched[uid], grace))
			}
		}
		return out
	})
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Image = "registry.invalid/app:v2" })
	after := e.waitSettled("web", 2)
	w.Verify(t)
	if len(patched) != 2 {
		t.Errorf("saw %d image patches, want 2", len(patched))
	}
	for name, p := range after {
		if p.UID != before[name].UID {
			t.Errorf("%s was re-created", name)
		}
		if c := gateCondition(p); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("%s: gate %v after the update", name, c)
		}
	}
}

func cpuRequest(cpu string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
}

// A change of container resources is made through pods/resize on the running pods (same UIDs),
// and the TApp settles only once the pods' statuses report the new resources. With the
// readiness gate the gate's opening labels the pods with the new template's hash.
func TestInPlaceResizeKeepsPods(t *testing.T) {
	resizeKeepsPods(t, true)
}

// Without the gate the resize is the only write: the pods keep their labels, and the TApp still
// counts them updated (from their resources) once their statuses report the new resources.
func TestInPlaceResizeWithoutGate(t *testing.T) {
	resizeKeepsPods(t, false)
}

func resizeKeepsPods(t *testing.T, gate bool) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("web", 3)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = &gate
	tp.Spec.Template.Spec.Containers[0].Resources = cpuRequest("100m")
	e.create(tp)
	before := e.waitSettled("web", 3)

	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Resources = cpuRequest("200m") })
	after := e.waitSettled("web", 3)
	want := resource.MustParse("200m")
	for name, p := range after {
		if p.UID != before[name].UID {
			t.Errorf("%s was re-created (uid %s, was %s)", name, p.UID, before[name].UID)
		}
		if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(want) != 0 {
			t.Errorf("%s: spec cpu request %s", name, q.String())
		}
		st := p.Status.ContainerStatuses
		if len(st) == 0 || st[0].Resources == nil {
			t.Fatalf("%s: status reports no resources", name)
		}
		if q := st[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(want) != 0 {
			t.Errorf("%s: status cpu request %s", name, q.String())
		}
		h, was := p.Labels[appsv1alpha1.LabelTemplateHash], before[name].Labels[appsv1alpha1.LabelTemplateHash]
		if want := tapp.TemplateHash(&e.get("web").Spec.Template); gate && h != want {
			t.Errorf("%s: template hash %s after the gate opened, want %s", name, h, want)
		}
		if !gate && h != was {
			t.Errorf("%s: relabelled without the gate (a write more than the resize)", name)
		}
	}
}
