package canary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// podHealth with a target measures the target's pods of the update revision
// (docs/analysis.md, "podHealth in every mode"): kwok's "restarting" images stay ready, so the
// step's pods are available and the step bakes, but their containers restart every few seconds.
// The check fails, the release rolls back by itself, and every pod returns to the stable image.

// healthCheck is a podHealth check of no restart, measured every 2 s, 10 times.
func healthCheck() v1alpha1.AnalysisCheck {
	return v1alpha1.AnalysisCheck{
		Name: "health", Interval: &metav1.Duration{Duration: 2 * time.Second}, Count: ptr.To[int32](10),
		Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}},
	}
}

// wantHealthAbort checks the release was rolled back by the health check at step 1, having
// measured restarts.
func wantHealthAbort(t *testing.T, c *v1alpha1.Canary) {
	t.Helper()
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "health" || a.Step != 1 || !strings.Contains(a.Message, "restarts:") {
		t.Errorf("abort %+v, want AnalysisFailed of health at step 1 with the restarts measured", a)
	}
}

func rolledBackByItself(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
	return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
}

func TestStatefulSetTargetPodHealthRollsBackARestartingCanary(t *testing.T) {
	e := setupTarget(t, true)
	e.createTargetCanary([]v1alpha1.AnalysisCheck{healthCheck()},
		step(intstr.FromInt32(1), nil, "health"),
		step(intstr.FromInt32(stsReplicas), nil))
	e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)

	e.setImage("example.com/ledger:restarting")
	wantHealthAbort(t, e.waitCanary("the release to roll back by itself", rolledBackByItself))
	e.waitStatefulSet("every pod back on the stable revision", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdatedReplicas == stsReplicas && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	if s := e.statefulSet(); s.Spec.Template.Spec.Containers[0].Image != "example.com/ledger:v1" {
		t.Errorf("template image %s after the rollback, want example.com/ledger:v1", s.Spec.Template.Spec.Containers[0].Image)
	}
	e.Eventually("every pod on example.com/ledger:v1", func() (bool, string) {
		got := e.images()
		return got["example.com/ledger:v1"] == stsReplicas, fmt.Sprint(got)
	})
}

func TestTAppTargetPodHealthRollsBackARestartingCanary(t *testing.T) {
	e := setupTAppTarget(t, true)
	e.createTAppCanary([]v1alpha1.AnalysisCheck{healthCheck()},
		step(intstr.FromInt32(1), nil, "health"),
		step(intstr.FromInt32(tappReplicas), nil))
	e.waitHolding()

	e.setTAppImage("example.com/games:restarting")
	wantHealthAbort(t, e.waitCanary("the release to roll back by itself", rolledBackByItself))
	if img := e.tapp().Spec.Template.Spec.Containers[0].Image; img != "example.com/games:v1" {
		t.Errorf("template image %s after the rollback, want example.com/games:v1", img)
	}
	e.Eventually("every instance on example.com/games:v1", func() (bool, string) {
		got := e.tappImages()
		return got["example.com/games:v1"] == tappReplicas, fmt.Sprint(got)
	})
}
