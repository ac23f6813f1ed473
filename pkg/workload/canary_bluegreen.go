package workload

import (
	"fmt"
	"time"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A blue-green Canary (spec.blueGreen) is shown with its steps like any other, and with where its
// two Services point and when its old version is scaled down (docs/canary.md, "Blue-green").

// blueGreenStepName is the name of step k of a blue-green Canary ("" without spec.blueGreen):
// the agent's words for it too.
func blueGreenStepName(c *v1alpha1.Canary, k int32) string {
	return v1alpha1.BlueGreenStepName(&c.Spec, k)
}

// blueGreenDeployments are the names of the old and new side's Deployments: the pair's, or a
// Deployment target and its temporary canary Deployment.
func blueGreenDeployments(c *v1alpha1.Canary) (old, new string) {
	if t := c.Spec.TargetRef; t != nil {
		return t.Name, v1alpha1.TemporaryCanaryName(c.Name)
	}
	return c.Spec.StableRef.Name, c.Spec.Canary.Name
}

// blueGreenSide says whose pods a Service (or the route) sends to: the stable or new
// Deployment's. A Deployment target's own pods are on the new template once handed over.
func blueGreenSide(c *v1alpha1.Canary, deployment string) string {
	old, new := blueGreenDeployments(c)
	switch {
	case deployment == "":
		return "not switched yet"
	case deployment == old && c.Spec.TargetRef != nil:
		return "deploy/" + deployment
	case deployment == old:
		return "stable deploy/" + deployment
	case deployment == new:
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
	if tr := c.Spec.TrafficRouting; tr != nil { // the switch is the route's weights
		lines[0] = fmt.Sprintf("active: HTTPRoute %s sends every request to the %s pods", tr.GatewayAPI.HTTPRoute, blueGreenSide(c, st.Active))
		if st.Active == "" {
			lines[0] = fmt.Sprintf("active: HTTPRoute %s splits the requests (see the weights)", tr.GatewayAPI.HTTPRoute)
		}
		if st.Preview == "" && c.Spec.TargetRef != nil { // no temporary Deployment: between releases
			lines[1] = fmt.Sprintf("preview: Service %s selects no pods until the next release", bg.PreviewService)
		}
	}
	old, _ := blueGreenDeployments(c)
	if t := st.ScaleDownTime; t != nil {
		if left := t.Sub(Now()).Round(time.Second); left > 0 {
			lines = append(lines, fmt.Sprintf("scale-down: deploy/%s in %s (at %s; abort switches back until then)",
				old, left, t.UTC().Format(time.RFC3339)))
		} else {
			lines = append(lines, fmt.Sprintf("scale-down: deploy/%s now", old))
		}
	}
	return lines
}

// canaryReady is the READY count of a Canary: the available pods of both Deployments, or for a
// blue-green one (both at full size around the switch) those of the side every request goes
// to, when one does.
func canaryReady(c *v1alpha1.Canary) int32 {
	st := &c.Status
	if c.Spec.BlueGreen != nil && st.BlueGreen != nil {
		switch old, new := blueGreenDeployments(c); st.BlueGreen.Active {
		case new:
			return st.CanaryAvailable
		case old:
			return st.StableAvailable
		}
	}
	return st.CanaryAvailable + st.StableAvailable
}

// blueGreenRole is role ("stable", "canary") with what the Services of a blue-green Canary
// make of Deployment deployment: "active", "preview" or both.
func blueGreenRole(c *v1alpha1.Canary, deployment, role string) string {
	st := c.Status.BlueGreen
	if c.Spec.BlueGreen == nil || st == nil {
		return role
	}
	if st.Active == deployment {
		role += ", active"
	}
	if st.Preview == deployment {
		role += ", preview"
	}
	return role
}

// blueGreenActive is what the summary line of a blue-green Canary says of the side every
// request goes to ("" without spec.blueGreen, or while none does), so that a log of status -w
// shows the switch.
func blueGreenActive(c *v1alpha1.Canary) string {
	if c.Spec.BlueGreen == nil || c.Status.BlueGreen == nil || c.Status.BlueGreen.Active == "" {
		return ""
	}
	return blueGreenSide(c, c.Status.BlueGreen.Active) + " pods"
}

// blueGreenStepSuffix is " (name)" of step k of a blue-green Canary, "" otherwise.
func blueGreenStepSuffix(c *v1alpha1.Canary, k int32) string {
	if name := blueGreenStepName(c, k); name != "" {
		return " (" + name + ")"
	}
	return ""
}
