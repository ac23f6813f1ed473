package tapp

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestTemplateSelection(t *testing.T) {
	base := newTApp("web", 5)
	pool := map[string]corev1.PodTemplateSpec{}
	for _, n := range []string{"a", "b"} {
		tpl := *base.Spec.Template.DeepCopy()
		tpl.Labels["tpl"] = n
		pool[n] = tpl
	}
	cases := []struct {
		name      string
		templates map[string]string
		def       string
		id        int
		wantName  string
		wantLabel string // "" for spec.template
		wantErr   bool
	}{
		{name: "spec.template without pool settings", id: 0, wantName: ""},
		{name: "templates entry wins", templates: map[string]string{"1": "a"}, def: "b", id: 1, wantName: "a", wantLabel: "a"},
		{name: "default for ids without entry", templates: map[string]string{"1": "a"}, def: "b", id: 2, wantName: "b", wantLabel: "b"},
		{name: "entry without default", templates: map[string]string{"3": "b"}, id: 3, wantName: "b", wantLabel: "b"},
		{name: "other ids fall back to spec.template", templates: map[string]string{"3": "b"}, id: 4, wantName: ""},
		{name: "missing pool entry is an error", templates: map[string]string{"0": "zzz"}, id: 0, wantName: "zzz", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := base.DeepCopy()
			tp.Spec.TemplatePool = pool
			tp.Spec.Templates = tc.templates
			tp.Spec.DefaultTemplateName = tc.def
			tpl, name, err := TemplateFor(tp, tc.id)
			if (err != nil) != tc.wantErr || name != tc.wantName {
				t.Fatalf("TemplateFor(%d) = %q, %v; want %q, error %v", tc.id, name, err, tc.wantName, tc.wantErr)
			}
			if err == nil && tpl.Labels["tpl"] != tc.wantLabel {
				t.Errorf("got the template labelled %q, want %q", tpl.Labels["tpl"], tc.wantLabel)
			}
		})
	}
}

func TestHashes(t *testing.T) {
	base := newTApp("web", 1).Spec.Template
	cases := []struct {
		name         string
		mutate       func(*corev1.PodTemplateSpec)
		sameTemplate bool
		sameUniq     bool
	}{
		{"unchanged", func(*corev1.PodTemplateSpec) {}, true, true},
		{"container image", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "x:2" }, false, true},
		{"every image", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Image = "x:2"
			p.Spec.Containers[1].Image = "y:2"
		}, false, true},
		{"init container image", func(p *corev1.PodTemplateSpec) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i:1"}}
		}, false, false},
		{"label", func(p *corev1.PodTemplateSpec) { p.Labels["x"] = "y" }, false, true},
		{"annotation", func(p *corev1.PodTemplateSpec) { p.Annotations = map[string]string{"x": "y"} }, false, true},
		{"command", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Command = []string{"other"} }, false, false},
		{"env", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, false, false},
		{"container name", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Name = "renamed" }, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := base.DeepCopy()
			tc.mutate(changed)
			if got := TemplateHash(&base) == TemplateHash(changed); got != tc.sameTemplate {
				t.Errorf("same template hash = %v, want %v", got, tc.sameTemplate)
			}
			if got := UniqHash(&base) == UniqHash(changed); got != tc.sameUniq {
				t.Errorf("same uniq hash = %v, want %v", got, tc.sameUniq)
			}
		})
	}
	withInit := base.DeepCopy()
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i:1"}}
	newerInit := withInit.DeepCopy()
	newerInit.Spec.InitContainers[0].Image = "i:2"
	if UniqHash(withInit) != UniqHash(newerInit) {
		t.Error("an init container image change must keep the uniq hash")
	}
	if h := TemplateHash(&base); len(h) == 0 || len(h) > 63 {
		t.Errorf("hash %q is not a label value", h)
	}
}

func TestPickUpdates(t *testing.T) {
	// s builds states: "U" needs update and available, "u" needs update and unavailable,
	// "A" up to date and available, "x" up to date and unavailable; lower-case-first letter r/f
	// prefix is not needed: rolling is given per test.
	s := func(rolling bool, spec string) []updateState {
		var out []updateState
		for i, ch := range spec {
			out = append(out, updateState{id: i, rolling: rolling, needsUpdate: ch == 'U' || ch == 'u', available: ch == 'U' || ch == 'A'})
		}
		return out
	}
	cases := []struct {
		name      string
		states    []updateState
		partition int
		paused    bool
		roll, frc int
		want      string
	}{
		{name: "one at a time in id order", states: s(true, "UUUU"), roll: 1, frc: 4, want: "[0]"},
		{name: "maxUnavailable 2", states: s(true, "UUUU"), roll: 2, frc: 4, want: "[0 1]"},
		{name: "budget used by an instance being updated", states: s(true, "xUUU"), roll: 2, frc: 4, want: "[1]"},
		{name: "no budget left", states: s(true, "xxUU"), roll: 2, frc: 4, want: "[]"},
		{name: "unavailable candidates cost nothing", states: s(true, "uUuU"), roll: 2, frc: 4, want: "[0 2]"},
		{name: "unavailable candidates even beyond the budget", states: s(true, "uuuU"), roll: 1, frc: 4, want: "[0 1 2]"},
		{name: "partition keeps low ids", states: s(true, "UUUU"), partition: 2, roll: 4, frc: 4, want: "[2 3]"},
		{name: "partition above replicas", states: s(true, "UUUU"), partition: 9, roll: 4, frc: 4, want: "[]"},
		{name: "unavailable below partition still counts", states: s(true, "xAUU"), partition: 2, roll: 1, frc: 4, want: "[]"},
		{name: "paused", states: s(true, "uUUU"), paused: true, roll: 4, frc: 4, want: "[]"},
		{name: "force group has its own budget", states: append(s(true, "UU"), updateState{id: 2, needsUpdate: true, available: true}, updateState{id: 3, needsUpdate: true, available: true}), roll: 1, frc: 2, want: "[0 2 3]"},
		{name: "force group limited", states: append(s(true, "A"), updateState{id: 1, needsUpdate: true, available: true}, updateState{id: 2, needsUpdate: true, available: true}, updateState{id: 3, available: true}), roll: 1, frc: 1, want: "[1]"},
		{name: "unavailable forced instance uses the force budget", states: append(s(true, "A"), updateState{id: 1, needsUpdate: true, available: true}, updateState{id: 2}), roll: 1, frc: 1, want: "[]"},
		{name: "nothing to do", states: s(true, "AAxA"), roll: 1, frc: 1, want: "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fmt.Sprint(pickUpdates(tc.states, tc.partition, tc.paused, tc.roll, tc.frc))
			if got != tc.want {
				t.Errorf("pickUpdates = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestResolveMaxUnavailable(t *testing.T) {
	cases := []struct {
		v        *intstr.IntOrString
		def      intstr.IntOrString
		replicas int
		want     int
	}{
		{nil, intstr.FromInt32(1), 10, 1},
		{nil, intstr.FromString("100%"), 10, 10},
		{ptr.To(intstr.FromInt32(3)), intstr.FromInt32(1), 10, 3},
		{ptr.To(intstr.FromString("25%")), intstr.FromInt32(1), 10, 2},
		{ptr.To(intstr.FromString("5%")), intstr.FromInt32(1), 10, 1},
		{nil, intstr.FromString("100%"), 0, 1},
		{ptr.To(intstr.FromString("bogus")), intstr.FromInt32(1), 10, 1},
	}
	for _, tc := range cases {
		if got := resolveMaxUnavailable(tc.v, tc.def, tc.replicas); got != tc.want {
			t.Errorf("resolveMaxUnavailable(%v, %v, %d) = %d, want %d", tc.v, tc.def, tc.replicas, got, tc.want)
		}
	}
}

func TestPlanRollingWithPool(t *testing.T) {
	// The rolling template is updateStrategy.template; without one, spec.template instances roll.
	tp := newTApp("web", 6)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	pods := map[int]*corev1.Pod{}
	for id := 0; id < 6; id++ {
		pods[id] = runningPod(tp, id)
	}
	tp.Spec.Template.Spec.Containers[0].Command = []string{"changed"}
	p := computePlan(tp, newTemplateSet(tp), pods, epoch, func(*corev1.Pod) bool { return false })
	var ids []int
	for _, d := range p.deletes {
		if d.reason != deleteRecreate {
			t.Errorf("deletion %+v", d)
		}
		ids = append(ids, d.id)
	}
	if fmt.Sprint(ids) != "[0 1]" || len(p.inPlace) != 0 || len(p.creates) != 0 {
		t.Errorf("recreate %v inPlace %d creates %d; want ids [0 1] only", ids, len(p.inPlace), len(p.creates))
	}
	// A pod with a write in flight counts as unavailable and is left alone.
	p = computePlan(tp, newTemplateSet(tp), pods, epoch, func(pod *corev1.Pod) bool { return pod.Name == "web-0" })
	ids = nil
	for _, d := range p.deletes {
		ids = append(ids, d.id)
	}
	if fmt.Sprint(ids) != "[1]" {
		t.Errorf("with web-0 in flight: recreate %v, want [1]", ids)
	}
}

func TestSameImage(t *testing.T) {
	cases := []struct {
		status, spec string
		want         bool
	}{
		{"nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:latest", "nginx", true},
		{"docker.io/bitnami/redis:7", "bitnami/redis:7", true},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10", true},
		{"localhost:5000/app:v1", "localhost:5000/app:v1", true},
		{"docker.io/library/nginx:1.26", "nginx:1.27", false},
		{"example.com/app:v1", "example.com/app:v2", false},
		{"quay.io/app@sha256:abc", "quay.io/app@sha256:abc", true},
		{"localhost:5000/app", "localhost:5000/app:latest", true},
	}
	for _, tc := range cases {
		if got := sameImage(tc.status, tc.spec); got != tc.want {
			t.Errorf("sameImage(%q, %q) = %v, want %v", tc.status, tc.spec, got, tc.want)
		}
	}
}

func TestShouldMarkReady(t *testing.T) {
	tp := newTApp("web", 1)
	info, _ := newTemplateSet(tp).forInstance(0)
	updating := func(p *corev1.Pod, target string) {
		p.Status.Conditions[0] = corev1.PodCondition{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionFalse,
			Reason: reasonInPlaceUpdating, Message: inPlaceMessagePrefix + target}
	}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{"already True", func(*corev1.Pod) {}, false},
		{"new pod, running", func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[1:] }, true},
		{"new pod, pending", func(p *corev1.Pod) {
			p.Status.Conditions = p.Status.Conditions[1:]
			p.Status.Phase = corev1.PodPending
		}, false},
		{"no gate", func(p *corev1.Pod) {
			p.Spec.ReadinessGates = nil
			p.Status.Conditions = p.Status.Conditions[1:]
		}, false},
		{"terminating", func(p *corev1.Pod) {
			p.Status.Conditions = p.Status.Conditions[1:]
			p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch))
		}, false},
		{"update done", func(p *corev1.Pod) { updating(p, info.hash) }, true},
		{"container still on the old image", func(p *corev1.Pod) {
			updating(p, info.hash)
			p.Status.ContainerStatuses[0].Image = "example.com/app:v0"
		}, false},
		{"container status missing", func(p *corev1.Pod) {
			updating(p, info.hash)
			p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1]
		}, false},
		{"image patch not visible yet", func(p *corev1.Pod) {
			updating(p, "other-hash")
			p.Labels[appsv1alpha1.LabelTemplateHash] = "old-hash"
			p.Labels[appsv1alpha1.LabelResizeHash] = "old-resize-hash"
		}, false},
		{"update reverted", func(p *corev1.Pod) { updating(p, "other-hash") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := runningPod(tp, 0)
			tc.mutate(p)
			if got, _ := shouldMarkReady(p, newTemplateSet(tp), info); got != tc.want {
				t.Errorf("shouldMarkReady = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPendingWrites(t *testing.T) {
	clk := testclock.NewFakeClock(epoch)
	w := newPendingWrites(clk)
	tp := newTApp("web", 1)
	p := runningPod(tp, 0)
	if w.inFlight(p) {
		t.Fatal("nothing recorded")
	}
	w.expectStatus(p)
	if !w.inFlight(p) {
		t.Fatal("status write not pending while the cache holds the same version")
	}
	newer := p.DeepCopy()
	bumpRV(newer)
	if w.inFlight(newer) || w.inFlight(p) {
		t.Fatal("status write still pending after a newer version was seen")
	}

	w.expectTemplate(p, "h2")
	if !w.inFlight(p) || !w.inFlight(newer) {
		t.Fatal("template write not pending before the pod shows the hash")
	}
	other := p.DeepCopy()
	other.UID = "recreated"
	if w.inFlight(other) {
		t.Fatal("a re-created pod inherited a pending write")
	}
	w.expectTemplate(p, "h2")
	clk.Step(inFlightTTL + time.Second)
	if w.inFlight(p) {
		t.Fatal("pending write did not expire")
	}
	w.expectTemplate(p, "h2")
	done := p.DeepCopy()
	done.Labels[appsv1alpha1.LabelTemplateHash] = "h2"
	if w.inFlight(done) {
		t.Fatal("template write pending after the pod shows the hash")
	}
}

func TestAppStatus(t *testing.T) {
	S := func(s ...appsv1alpha1.InstanceStatus) []appsv1alpha1.InstanceStatus { return s }
	cases := []struct {
		active []appsv1alpha1.InstanceStatus
		killed int
		want   appsv1alpha1.AppStatus
	}{
		{nil, 0, appsv1alpha1.AppRunning},
		{nil, 2, appsv1alpha1.AppKilled},
		{S(appsv1alpha1.InstanceNotCreated, appsv1alpha1.InstancePending), 0, appsv1alpha1.AppPending},
		{S(appsv1alpha1.InstancePending, appsv1alpha1.InstanceRunningNow), 0, appsv1alpha1.AppRunning},
		{S(appsv1alpha1.InstanceUpdating), 1, appsv1alpha1.AppRunning},
		{S(appsv1alpha1.InstancePodSucc, appsv1alpha1.InstancePodSucc), 0, appsv1alpha1.AppSucc},
		{S(appsv1alpha1.InstancePodSucc, appsv1alpha1.InstancePodFailed), 0, appsv1alpha1.AppFailed},
		{S(appsv1alpha1.InstancePodFailed, appsv1alpha1.InstanceRunningNow), 0, appsv1alpha1.AppRunning},
	}
	for _, tc := range cases {
		if got := appStatus(tc.active, tc.killed); got != tc.want {
			t.Errorf("appStatus(%v, %d) = %s, want %s", tc.active, tc.killed, got, tc.want)
		}
	}
}

func TestInstanceIDAndNames(t *testing.T) {
	if PodName("web", 12) != "web-12" || PVCName("data", "web", 3) != "data-web-3" {
		t.Error("names")
	}
	for v, ok := range map[string]bool{"0": true, "17": true, "-1": false, "01": false, "x": false, "": false} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1alpha1.LabelInstanceID: v}}}
		if _, got := instanceID(p); got != ok {
			t.Errorf("instanceID(%q) ok = %v, want %v", v, got, ok)
		}
	}
}
