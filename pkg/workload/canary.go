package workload

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Canary is the kind that releases a new template in steps: from a stable to a canary
// Deployment, or of its spec.targetRef (in place, or for a Deployment through a temporary canary
// Deployment).
var Canary = Kind{Name: "Canary", Short: "canary",
	Resource: v1alpha1.SchemeGroupVersion.WithResource("canaries"),
	aliases:  []string{"canaries", "canaries.apps.workload.dev"}, helper: canaryKind{}}

type canaryKind struct{}

func (canaryKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return canaryStatus(obj)
}

func (canaryKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	return t.canary(obj)
}

func (canaryKind) Replicas(obj *unstructured.Unstructured) (Replicas, error) {
	c, err := AsCanary(obj)
	if err != nil {
		return Replicas{}, err
	}
	return Replicas{c.Total(), c.Status.CanaryAvailable + c.Status.StableAvailable, c.Status.CanaryReplicas}, nil
}

func (canaryKind) PausedPath() []string { return []string{"spec", "paused"} }

func (canaryKind) Abort(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	return AbortCanary(ref, obj)
}

func (canaryKind) Retry(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	return RetryCanary(ref, obj)
}

func (canaryKind) CheckPromote(ref Ref, o PromoteOptions) error {
	if len(o.Subsets) > 0 || o.All {
		return fmt.Errorf("%s: --subset and --all apply to a ud (UnitedDeployment); a canary is promoted batch by batch, or with --full", ref)
	}
	return nil
}

// Promote approves the paused batch (every batch with --full).
func (canaryKind) Promote(ref Ref, obj *unstructured.Unstructured, o PromoteOptions) (Change, int32, error) {
	return PromoteCanary(ref, obj, o.Full)
}

// PodTemplatePath is spec.canary.template; a Canary with a target has none (its template is
// the target's).
func (canaryKind) PodTemplatePath(ref Ref, obj *unstructured.Unstructured, _ string) ([]string, string, error) {
	if c, err := AsCanary(obj); err == nil && c.Spec.TargetRef != nil {
		return nil, "", refuseTargetTemplate(ref, c)
	}
	return []string{"spec", "canary", "template"}, "", nil
}

// AsCanary decodes a Canary read through the dynamic client.
func AsCanary(obj *unstructured.Unstructured) (*v1alpha1.Canary, error) {
	return as[v1alpha1.Canary](obj)
}

func canaryStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return canaryFleetStatus(obj, nil)
}

// canaryFleetStatus is the status of a Canary; ud is the UnitedDeployment it releases, read to
// name each wave's clusters (nil when not read).
func canaryFleetStatus(obj *unstructured.Unstructured, ud *v1alpha1.UnitedDeployment) (RolloutStatus, error) {
	var c v1alpha1.Canary
	if err := fromUnstructured(obj, &c); err != nil {
		return RolloutStatus{}, err
	}
	st := c.Status
	total := int32(len(st.Batches))
	progress := canaryStepLines(&c, fleetOf(ud))
	progress = append(progress, canaryTrafficLines(&c)...) // canary_traffic.go
	progress = append(progress, blueGreenLines(&c)...)     // canary_bluegreen.go
	if c.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, c.Generation, st.ObservedGeneration, progress), nil
	}
	counts := fmt.Sprintf("canary %d/%d available, stable %d/%d available", st.CanaryAvailable, st.CanaryReplicas, st.StableAvailable, st.StableReplicas)
	if c.Spec.TargetRef != nil {
		counts = targetCounts(&c) // canary_target.go
	}
	if side := blueGreenActive(&c); side != "" { // canary_bluegreen.go
		counts = "active: " + side + ", " + counts
	}
	if total > 0 && st.CurrentBatch > 0 {
		counts = fmt.Sprintf("%s %d of %d%s, %s", stepWord(&c), st.CurrentBatch, total, blueGreenStepSuffix(&c, st.CurrentBatch), counts)
	}
	if a := abortLine(&c); a != "" {
		counts = a + "; " + counts
	}
	if st.Message != "" {
		counts += " (" + st.Message + ")"
	}
	counts += fleetHold(&c, fleetOf(ud)) // fleet.go
	var s RolloutStatus
	switch st.Phase {
	case v1alpha1.CanaryCompleted:
		s = status(StateComplete, counts, progress)
	case v1alpha1.CanaryPaused:
		s = status(StatePaused, counts, progress)
	case v1alpha1.CanaryDegraded:
		s = status(StateDegraded, counts, progress)
	case v1alpha1.CanaryRolledBack:
		s = status(StateDegraded, "rolled back; "+counts, progress)
	case v1alpha1.CanaryRollingBack:
		s = status(StateProgressing, "rolling back; "+counts, progress)
	default:
		s = status(StateProgressing, counts, progress)
	}
	if st.Phase != "" {
		s.Phase = string(st.Phase)
	}
	return s, nil
}

// canaryStepLines are the status lines of a Canary's steps, the current one with what it waits
// for; with a fleet (f), each step names its wave's clusters.
func canaryStepLines(c *v1alpha1.Canary, f *fleet) []string {
	st := c.Status
	total := int32(len(st.Batches))
	var progress []string
	width := 0
	for _, b := range st.Batches {
		width = max(width, len(plural(b.CanaryReplicas, "canary pod", "canary pods")))
	}
	for _, b := range st.Batches {
		mark := " "
		if b.Index == st.CurrentBatch {
			mark = ">"
		}
		line := fmt.Sprintf("%s %s %d/%d  %-*s  %s", mark, stepWord(c), b.Index, total, width, plural(b.CanaryReplicas, "canary pod", "canary pods"), b.State)
		if name := blueGreenStepName(c, b.Index); name != "" { // canary_bluegreen.go
			line += "  (" + name + ")"
		}
		if wave := waveSubsets(c, udOf(f), b.Index); f != nil && len(wave) > 0 { // fleet.go
			line += "  clusters " + f.waveClusters(wave)
		}
		progress = append(progress, line)
		if b.Index == st.CurrentBatch {
			for _, d := range canaryStepDetail(c, f) {
				progress = append(progress, "      "+d.String())
			}
		}
	}
	return progress
}

// canaryStepNodes is the tree's line of a Canary's steps (or batches), the current one with
// what it waits for; with a fleet (f), each step names its wave's clusters. Nil before the agent
// reported any.
func canaryStepNodes(c *v1alpha1.Canary, f *fleet) *Node {
	if len(c.Status.Batches) == 0 {
		return nil
	}
	batches := &Node{Name: "batches", Info: fmt.Sprintf("current %d of %d, pauseType %s", c.Status.CurrentBatch, len(c.Status.Batches), orDefault(string(c.Spec.PauseType), string(v1alpha1.PauseFirst)))}
	if stepWord(c) == "step" {
		batches.Name, batches.Info = "steps", fmt.Sprintf("current %d of %d", c.Status.CurrentBatch, len(c.Status.Batches))
	}
	for _, b := range c.Status.Batches {
		n := &Node{Name: fmt.Sprintf("%s %d", stepWord(c), b.Index), Status: string(b.State), Info: plural(b.CanaryReplicas, "canary pod", "canary pods")}
		if name := blueGreenStepName(c, b.Index); name != "" {
			n.Info += ", " + name
		}
		if wave := waveSubsets(c, udOf(f), b.Index); f != nil && len(wave) > 0 { // fleet.go
			n.Info += ", clusters " + f.waveClusters(wave)
		}
		if b.Index == c.Status.CurrentBatch {
			// The name stays short (the tree's first column), the verdict is the STATUS
			// and the rest goes to INFO, the column a narrow terminal cuts.
			for _, d := range canaryStepDetail(c, f) {
				n.Children = append(n.Children, &Node{Name: d.name, Status: d.verdict, Info: d.info})
			}
		}
		if b.StartTime != nil {
			n.Created = b.StartTime.Time
		}
		if b.Index == c.Status.CurrentBatch {
			n.Info += " (current)"
		}
		batches.Children = append(batches.Children, n)
	}
	return batches
}

func (t *treeReader) canary(obj *unstructured.Unstructured) (*Node, error) {
	var c v1alpha1.Canary
	if err := fromUnstructured(obj, &c); err != nil {
		return nil, err
	}
	var target []*Node
	if c.Spec.TargetRef != nil {
		var err error
		if target, err = t.targetNodes(&c); err != nil { // canary_target.go
			return nil, err
		}
	}
	f := targetFleet(&c, target) // fleet.go
	st, stErr := canaryFleetStatus(obj, udOf(f))
	root := workloadNode(Canary, obj, obj, st, stErr, canaryReady(&c), c.Total())
	if batches := canaryStepNodes(&c, f); batches != nil {
		root.Children = append(root.Children, batches)
	}
	root.Children = append(root.Children, canaryTrafficNodes(&c)...) // canary_traffic.go
	for _, l := range blueGreenLines(&c) {
		name, info, _ := strings.Cut(l, ": ")
		root.Children = append(root.Children, &Node{Name: name, Info: info})
	}
	if c.Spec.TargetRef != nil {
		root.Children = append(root.Children, target...)
		return root, nil
	}
	for _, d := range []struct{ name, role string }{{c.Spec.StableRef.Name, "stable"}, {c.Spec.Canary.Name, "canary"}} {
		deploy, err := t.kube.AppsV1().Deployments(t.ns).Get(t.ctx, d.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			root.Children = append(root.Children, &Node{Name: Deployment.Short + "/" + d.name, Status: "NotFound", Info: d.role})
			continue
		case err != nil:
			return nil, fmt.Errorf("reading its %s Deployment %q: %w", d.role, d.name, err)
		}
		n, err := t.deployment(deploy, deploy, false)
		if err != nil {
			return nil, fmt.Errorf("%s Deployment %q: %w", d.role, d.name, err)
		}
		n.Info = deploymentInfo(blueGreenRole(&c, d.name, d.role), deploy) // canary_bluegreen.go
		root.Children = append(root.Children, n)
	}
	return root, nil
}

// rollbackPath is a Canary's rollback switch.
var rollbackPath = []string{"spec", "rollback"}

// AbortPatch is the merge patch that sets a Canary's spec.rollback and nothing else. Setting it
// twice is the same as once, so no precondition is needed.
func AbortPatch() (Patch, error) {
	return MergePatch(rollbackPath, true)
}

// AbortCanary decides what `abort` does to a Canary: start its rollback (the agent scales the
// stable Deployment back up first, then the canary down), or nothing if it already rolls back.
func AbortCanary(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	c, err := AsCanary(obj)
	if err != nil {
		return Change{}, err
	}
	if c.Spec.Rollback {
		if c.Status.Phase == v1alpha1.CanaryRolledBack {
			return Unchanged(ref, "%s is already rolled back", ref), nil
		}
		return Unchanged(ref, "%s is already rolling back", ref), nil
	}
	p, err := AbortPatch()
	if err != nil {
		return Change{}, err
	}
	line := ref.String() + " aborted: rolling back to the stable Deployment " + c.Spec.StableRef.Name
	if t := c.Spec.TargetRef; t != nil {
		line = fmt.Sprintf("%s aborted: writing the stable revision's template back to %s/%s", ref, kindShort(t.Kind), t.Name)
	}
	return Change{Ref: ref, Patch: &p, Line: line}, nil
}
