package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A blue-green release is written as steps, so that one step machine runs it like any other
// (docs/canary.md, "Blue-green"):
//
//	preview    the new pods (previewReplicas, or every replica) behind previewService; its bake
//	           is prePromotionAnalysis and the promotion: a pause until a promote, or of
//	           autoPromotionSeconds
//	full size  with previewReplicas only: every replica on the new version before the switch
//	switch     activeService selects the new pods from the start of this step; its bake is
//	           postPromotionAnalysis
//	scale-down the old pods stay up for scaleDownDelaySeconds, then go as the release completes

// BlueGreenSteps are the steps of spec.blueGreen; nil without it.
func BlueGreenSteps(spec *CanarySpec) []ReleaseStep {
	bg := spec.BlueGreen
	if bg == nil {
		return nil
	}
	preview := ReleaseStep{Replicas: BlueGreenPreviewReplicas(spec), Analysis: bg.PrePromotionAnalysis, Pause: &CanaryPause{}}
	if bg.AutoPromotionSeconds != nil {
		preview.Pause = secondsPause(*bg.AutoPromotionSeconds)
	}
	steps := []ReleaseStep{preview}
	if preview.Replicas < spec.Replicas {
		steps = append(steps, ReleaseStep{Replicas: spec.Replicas})
	}
	steps = append(steps,
		ReleaseStep{Replicas: spec.Replicas, Analysis: bg.PostPromotionAnalysis},
		ReleaseStep{Replicas: spec.Replicas, Pause: secondsPause(BlueGreenScaleDownDelay(bg))})
	return steps
}

// BlueGreenStepName is the name of step k of spec.blueGreen ("preview", "full size", "switch",
// "scale-down"), as BlueGreenSteps makes them: the words the agent's messages and the plugin
// use for them. "" without spec.blueGreen or for a k out of range.
func BlueGreenStepName(spec *CanarySpec, k int32) string {
	if spec.BlueGreen == nil {
		return ""
	}
	names := []string{"preview", "switch", "scale-down"}
	if BlueGreenSwitchStep(spec) == 3 {
		names = []string{"preview", "full size", "switch", "scale-down"}
	}
	if k < 1 || int(k) > len(names) {
		return ""
	}
	return names[k-1]
}

// BlueGreenSwitchStep is the step from whose start activeService selects the new pods: the one
// after the new version reached every replica. 0 without spec.blueGreen.
func BlueGreenSwitchStep(spec *CanarySpec) int32 {
	if spec.BlueGreen == nil {
		return 0
	}
	if BlueGreenPreviewReplicas(spec) < spec.Replicas {
		return 3
	}
	return 2
}

// BlueGreenPreviewReplicas is the number of new pods before the promotion.
func BlueGreenPreviewReplicas(spec *CanarySpec) int32 {
	if p := spec.BlueGreen.PreviewReplicas; p != nil && *p < spec.Replicas {
		return *p
	}
	return spec.Replicas
}

// BlueGreenScaleDownDelay is spec.blueGreen.scaleDownDelaySeconds with its default.
func BlueGreenScaleDownDelay(bg *CanaryBlueGreen) int32 {
	if bg.ScaleDownDelaySeconds == nil {
		return DefaultScaleDownDelaySeconds
	}
	return *bg.ScaleDownDelaySeconds
}

// secondsPause is a timed pause of s seconds; nil for none.
func secondsPause(s int32) *CanaryPause {
	if s <= 0 {
		return nil
	}
	return &CanaryPause{Duration: &metav1.Duration{Duration: time.Duration(s) * time.Second}}
}
