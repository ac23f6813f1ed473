package workload

import (
	"fmt"
	"time"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A blue-green Canary (spec.blueGreen) is shown with its steps like any other, and with where its
// two Services point and when its old version is scaled down (docs/canary.md, "Blue-green").

// blueGreenStepNames names the steps of a blue-green release, as v1alpha1.BlueGreenSteps makes
// them: the preview, the full size (with previewReplicas only), the switch and the scale-down.
func blueGreenStepNames(c *v1alpha1.Canary) []string {
	if v1alpha1.BlueGreenSwitchStep(&c.Spec) == 3 {
		return []string{"preview", "full size", "switch", "scale-down"}
	}
	return []string{"preview", "switch", "scale-down"}
}

// blueGreenStepName is the name of step k of a blue-green Canary ("" without spec.blueGreen).
func blueGreenStepName(c *v1alpha1.Canary, k int32) string {
	if c.Spec.BlueGreen == nil {
		return ""
	}
	if names := blueGreenStepNames(c); k >= 1 && int(k) <= len(names) {
		return names[k-1]
	}
	return ""
}

// blueGreenSide says whose pods a Service selects: the stable or new Deployment's.
func blueGreenSide(c *v1alpha1.Canary, deployment string) string {
	switch deployment {
	case "":
		return "not switched yet"
	case c.Spec.StableRef.Name:
		return "stable deploy/" + deployment
	case c.Spec.Canary.Name:
		return "new deploy/" + deployment
	}
	return "deploy/" + deployment
}

// blueGreenLines are the lines of a blue-green Canary's status: which side each Service selects
// and the scale-down countdown.
func blueGreenLines(c *v1alpha1.Canary) []string {
	bg := c.Spec.BlueGreen
	if bg == nil {
		return nil
	}
	st := c.Status.BlueGreen
	if st == nil {
		st = &v1alpha1.CanaryBlueGreenStatus{}
	}
	lines := []string{
		fmt.Sprintf("active: Service %s selects the %s pods", bg.ActiveService, blueGreenSide(c, st.Active)),
		fmt.Sprintf("preview: Service %s selects the %s pods", bg.PreviewService, blueGreenSide(c, st.Preview)),
	}
	if t := st.ScaleDownTime; t != nil {
		if left := t.Sub(Now()).Round(time.Second); left > 0 {
			lines = append(lines, fmt.Sprintf("scale-down: deploy/%s in %s (at %s; abort switches back until then)",
				c.Spec.StableRef.Name, left, t.UTC().Format(time.RFC3339)))
		} else {
			lines = append(lines, fmt.Sprintf("scale-down: deploy/%s now", c.Spec.StableRef.Name))
		}
	}
	return lines
}
