package canary

import (
	"context"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A release is one way of bringing a Canary's new pod template to its pods (docs/architecture.md,
// "Canary"): the Deployment pair of spec.stableRef + spec.canary (release_pair.go), a workload
// released in place through its partition (spec.targetRef of a StatefulSet, TApp,
// UnitedDeployment or DaemonSet: release_inplace.go), or the user's own Deployment held paused
// while a temporary canary Deployment carries its new template (spec.targetRef of a Deployment:
// release_deployment.go), and the blue-green forms of the pair and of a Deployment target
// (release_bluegreen.go, release_bluegreen_target.go). releaseFor chooses it once per sync; no
// other code asks which one it is.
//
// The step machine (steps.go, bake.go: steps, pauses, analysis, deadline, approvals) drives a
// releasePlan and knows no mode; a releasePlan never calls the step machine. Adding a mode is a
// file implementing both interfaces and a line in releaseFor.

// release is what a mode does outside a sync's plan: the objects it reads and holds, and what
// it leaves behind as its Canary is deleted.
type release interface {
	// deploymentNames are the Deployments the mode reads by name: watched by name, and indexed
	// so that their events find the Canary.
	deploymentNames(cn *v1alpha1.Canary) []string
	// target is the workload the mode holds (one Canary per workload), nil for none.
	target(cn *v1alpha1.Canary) *v1alpha1.CanaryTargetRef
	// observe reads the mode's workloads into obs, with the sync's context.
	observe(ctx context.Context, c *Controller, obs *observed) error
	// plan returns the planner of one sync, deciding into d.
	plan(d *decision) releasePlan
	// releaseHold, as the Canary is deleted, lets the workload it held update by itself again.
	releaseHold(ctx context.Context, c *Controller, cn *v1alpha1.Canary) error
}

// course is what a sync does with a release, as its releasePlan's begin decides.
type course int

const (
	// decided: begin decided everything (a refusal, a wait, a hold begun): the steps do not run.
	decided course = iota
	// holding: there is nothing to release; the workload is held for the next release.
	holding
	// rollingBack: the release goes back to its stable template.
	rollingBack
	// progressing: the release moves through its steps.
	progressing
)

// releasePlan is a mode's side of one sync's plan. The step machine calls it; it decides its
// writes and the phase and message of what it does into its decision, and reads the batch
// state there, but never moves the steps itself.
type releasePlan interface {
	// begin checks what was observed and chooses the sync's course.
	begin() course
	// beforeFirstStep prepares the first step of a release (the snapshot of a stable Deployment).
	beforeFirstStep()
	// refuseAfterCompletion reports, with the Degraded it sets, a template that cannot be
	// released any more once the release completed.
	refuseAfterCompletion() bool
	// templateChanged reports whether the release's new template changed under a baking step.
	templateChanged() bool
	// move sets the release's pods on the new template to target; with hold (spec.paused) no
	// pod moves towards it, but capacity may still grow back.
	move(target int32, hold bool)
	// stepDone reports whether the pods of step k run, all available.
	stepDone(k int32) bool
	// Capacity accounting: pods on the new template, those available, pods on the stable one,
	// and stable pods the release still waits to go once its last step is complete.
	canaryReplicas() int32
	canaryAvailable() int32
	stableReplicas() int32
	stableLeft() int32
	// settle finishes a sync whose steps moved forward without an abort.
	settle()
	// hold keeps a workload with nothing to release held, and reports the last release.
	hold()
	// rollback returns the workload to the stable template.
	rollback()
	// route decides the traffic routing of the sync's outcome, holding back the writes it must
	// precede.
	route()
	// fillStatus fills the replica counts and status.target of the Canary's status.
	fillStatus(st *v1alpha1.CanaryStatus)
	// execute makes the mode's writes, stopping at the first the API server refuses, which it
	// returns as a failure to show on the Canary.
	execute(ctx context.Context, c *Controller) (*failure, error)
}

// releaseFor is the release mode spec describes: the only place that tells them apart.
func releaseFor(cn *v1alpha1.Canary) release {
	switch ref := cn.Spec.TargetRef; {
	case cn.Spec.BlueGreen != nil && ref == nil:
		return blueGreenRelease{}
	case ref == nil:
		return pairRelease{}
	case ref.Kind == kindDeployment && cn.Spec.BlueGreen != nil:
		return blueGreenTargetRelease{}
	case ref.Kind == kindDeployment:
		return deploymentRelease{}
	default:
		return inPlaceRelease{}
	}
}
