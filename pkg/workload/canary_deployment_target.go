package workload

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary whose spec.targetRef is a Deployment holds it paused between releases; a change of
// its template (kubectl workload set image deploy/x) is released on a temporary canary
// Deployment the Canary owns (v1alpha1.TemporaryCanaryName), which the user's Deployment
// replaces at the end. Its status.target names the stable and the released templates by hash.

// targetNodes are the Canary's target Deployment and its temporary canary Deployment.
func (deploymentKind) targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error) {
	return t.deploymentTargetNodes(c)
}

func (deploymentKind) targetCounts(c *v1alpha1.Canary) string { return deploymentTargetCounts(c) }

// canaryPaired: a Canary also names Deployments as its stable and canary workloads
// (spec.stableRef, spec.canary), and holds a target Deployment paused.
func (deploymentKind) canaryPaired() {}

// deploymentTargetCounts is the status line's counts of a Canary whose target is a Deployment.
func deploymentTargetCounts(c *v1alpha1.Canary) string {
	t, st, name := c.Status.Target, &c.Status, c.Spec.TargetRef.Name
	held := st.Phase == v1alpha1.CanaryCompleted || st.Phase == v1alpha1.CanaryRolledBack
	if t.UpdateRevision == t.StableRevision && held {
		return fmt.Sprintf("deploy/%s at template %s, %d/%d available, held paused",
			name, t.StableRevision, st.StableAvailable, c.Total())
	}
	return fmt.Sprintf("deploy/%s: template %s (from %s), canary deploy/%s %d/%d available, deploy/%s %d/%d available",
		name, t.UpdateRevision, t.StableRevision, v1alpha1.TemporaryCanaryName(c.Name), st.CanaryAvailable, st.CanaryReplicas,
		name, st.StableAvailable, st.StableReplicas)
}

// deploymentTargetNodes are the tree's lines of a Canary's target Deployment and, during a
// release, of its temporary canary Deployment.
func (t *treeReader) deploymentTargetNodes(c *v1alpha1.Canary) ([]*Node, error) {
	var nodes []*Node
	for _, d := range []struct{ name, role string }{
		{c.Spec.TargetRef.Name, "target"},
		{v1alpha1.TemporaryCanaryName(c.Name), "canary"},
	} {
		deploy, err := t.kube.AppsV1().Deployments(t.ns).Get(t.ctx, d.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && d.role == "canary":
			continue // between releases there is none
		case apierrors.IsNotFound(err):
			nodes = append(nodes, &Node{Name: Deployment.Short + "/" + d.name, Status: "NotFound", Info: d.role})
			continue
		case err != nil:
			return nil, fmt.Errorf("reading its %s Deployment %q: %w", d.role, d.name, err)
		}
		n, err := t.deployment(deploy, deploy, false)
		if err != nil {
			return nil, fmt.Errorf("%s Deployment %q: %w", d.role, d.name, err)
		}
		n.Info = deploymentInfo(blueGreenRole(c, d.name, d.role), deploy) // canary_bluegreen.go
		if d.role == "target" {
			n.Info += "; " + targetCounts(c)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
