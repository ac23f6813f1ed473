package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBlueGreenSteps(t *testing.T) {
	timed := func(s int) *CanaryPause {
		return &CanaryPause{Duration: &metav1.Duration{Duration: time.Duration(s) * time.Second}}
	}
	for _, tc := range []struct {
		name     string
		bg       CanaryBlueGreen
		want     []ReleaseStep
		switchAt int32
	}{{
		name: "promote by hand, default delay",
		bg:   CanaryBlueGreen{PrePromotionAnalysis: []string{"pre"}, PostPromotionAnalysis: []string{"post"}},
		want: []ReleaseStep{
			{Replicas: 4, Analysis: []string{"pre"}, Pause: &CanaryPause{}},
			{Replicas: 4, Analysis: []string{"post"}},
			{Replicas: 4, Pause: timed(30)},
		},
		switchAt: 2,
	}, {
		name: "preview replicas first, auto-promotion, no delay",
		bg:   CanaryBlueGreen{PreviewReplicas: ptr.To[int32](1), AutoPromotionSeconds: ptr.To[int32](20), ScaleDownDelaySeconds: ptr.To[int32](0)},
		want: []ReleaseStep{
			{Replicas: 1, Pause: timed(20)},
			{Replicas: 4},
			{Replicas: 4},
			{Replicas: 4},
		},
		switchAt: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &CanarySpec{Replicas: 4, BlueGreen: &tc.bg}
			got, err := CanarySteps(spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps\n got %+v\nwant %+v", got, tc.want)
			}
			if s := BlueGreenSwitchStep(spec); s != tc.switchAt {
				t.Errorf("switch step %d, want %d", s, tc.switchAt)
			}
		})
	}
}
