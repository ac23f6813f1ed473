package v1alpha1

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestCanaryStepsFromSteps(t *testing.T) {
	timed := &CanaryPause{Duration: nil}
	spec := &CanarySpec{Replicas: 10, Steps: []CanaryStep{
		{Replicas: intstr.FromString("25%"), Pause: timed, Analysis: []string{"errors"}},
		{Replicas: intstr.FromInt32(5)},
		{Replicas: intstr.FromString("75%")},
	}}
	got, err := CanarySteps(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{3, 5, 8, 10} // 25% of 10 rounds half up to 3; 75% to 8; then a final 100% step
	if len(got) != len(want) {
		t.Fatalf("got %d steps %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Replicas != w {
			t.Errorf("step %d: %d replicas, want %d", i+1, got[i].Replicas, w)
		}
	}
	if got[0].Pause != timed || len(got[0].Analysis) != 1 || got[3].Pause != nil {
		t.Errorf("pauses or analysis not carried: %+v", got)
	}
}

func TestCanaryStepsLastFullAddsNothing(t *testing.T) {
	spec := &CanarySpec{Replicas: 4, Steps: []CanaryStep{{Replicas: intstr.FromInt32(1)}, {Replicas: intstr.FromString("100%")}}}
	got, err := CanarySteps(spec)
	if err != nil || len(got) != 2 || got[1].Replicas != 4 {
		t.Fatalf("got %+v, %v; want 2 steps ending at 4", got, err)
	}
	spec.Steps[0].Replicas = intstr.FromInt32(9) // capped at replicas
	if got, _ := CanarySteps(spec); got[0].Replicas != 4 {
		t.Errorf("step over replicas: got %d, want 4", got[0].Replicas)
	}
}

func TestCanaryStepsShorthand(t *testing.T) {
	for _, tc := range []struct {
		pause  PauseType
		paused []bool
	}{
		{PauseFirst, []bool{true, false, false, false}},
		{"", []bool{true, false, false, false}},
		{PauseAll, []bool{true, true, true, false}},
		{PauseNone, []bool{false, false, false, false}},
	} {
		got, err := CanarySteps(&CanarySpec{Replicas: 10, Batches: ptr.To[int32](4), PauseType: tc.pause})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range got {
			if (s.Pause != nil) != tc.paused[i] || (s.Pause != nil && s.Pause.Duration != nil) {
				t.Errorf("pauseType %q step %d: pause %+v, want paused=%v until promote", tc.pause, i+1, s.Pause, tc.paused[i])
			}
		}
		if got[1].Replicas != 4 {
			t.Errorf("batch plan not used: %+v", got)
		}
	}
}

func TestCanaryStepsRefusesTwoForms(t *testing.T) {
	spec := &CanarySpec{Replicas: 4, Batches: ptr.To[int32](2), Steps: []CanaryStep{{Replicas: intstr.FromInt32(1)}}}
	if _, err := CanarySteps(spec); err == nil {
		t.Error("steps with batches accepted")
	}
	spec = &CanarySpec{Replicas: 4, Steps: []CanaryStep{{Replicas: intstr.FromString("half")}}}
	if _, err := CanarySteps(spec); err == nil {
		t.Error("a step of \"half\" accepted")
	}
}

func TestCanaryMaxSurge(t *testing.T) {
	for _, tc := range []struct {
		replicas int32
		surge    *intstr.IntOrString
		want     int32
	}{
		{10, nil, 3}, // 25% of 10 rounds up
		{1000, nil, 250},
		{4, nil, 1},
		{0, nil, 1}, // at least one
		{10, ptr.To(intstr.FromInt32(2)), 2},
		{10, ptr.To(intstr.FromString("1%")), 1},
	} {
		got, err := CanaryMaxSurge(&CanarySpec{Replicas: tc.replicas, MaxSurge: tc.surge})
		if err != nil || got != tc.want {
			t.Errorf("replicas %d maxSurge %v: got %d, %v; want %d", tc.replicas, tc.surge, got, err, tc.want)
		}
	}
}

func TestCanaryProgressDeadline(t *testing.T) {
	if got := CanaryProgressDeadline(&CanarySpec{}); got != 10*time.Minute {
		t.Errorf("default: %v", got)
	}
	if got := CanaryProgressDeadline(&CanarySpec{ProgressDeadlineSeconds: ptr.To[int32](30)}); got != 30*time.Second {
		t.Errorf("30s: %v", got)
	}
}
