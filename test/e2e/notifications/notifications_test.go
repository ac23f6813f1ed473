package notifications

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// A release that pauses, fails its analysis and rolls back, then, retried with a passing
// check, one that pauses and completes: every trigger is delivered exactly once, to the
// Canary's subscriptions and its namespace's. The first on-paused meets a receiver that fails
// three times: the Canary shows the condition NotificationsDelivered False meanwhile, the
// release is not held, and the notification arrives once. on-completed also goes to Slack and
// Teams, whose payloads are checked against their documented shapes.
func TestReleaseNotifications(t *testing.T) {
	e := e2eenv.Setup(t)
	rc := newReceiver(t)
	configure(e, rc)
	subscribe(e, "on-completed.hook=", "on-completed.slack=", "on-completed.teams=releases")
	failures := 3
	rc.setFail(func(r request) bool {
		if r.Service == "hook" && r.Trigger() == notify.OnPaused && failures > 0 {
			failures--
			return true
		}
		return false
	})
	agent := startAgent(e)
	release(e, "web", "nginx:1.27", 0, map[string]string{"on-step-started.hook": "", "on-paused.hook": "", "on-rolled-back.hook": ""},
		[]v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-fail")},
		v1alpha1.CanaryStep{Replicas: intOrPercent(1), Pause: &v1alpha1.CanaryPause{}},
		v1alpha1.CanaryStep{Replicas: intOrPercent(2), Analysis: []string{"smoke"}})

	// Release 1: paused at step 1; the first on-paused fails three times.
	waitCanary(e, "web", "showing the failed delivery as a condition", func(cn *v1alpha1.Canary) bool {
		c := meta.FindStatusCondition(cn.Status.Conditions, notify.ConditionDelivered)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == notify.ReasonDeliveryFailed &&
			strings.Contains(c.Message, "on-paused to hook") && !strings.Contains(c.Message, "s3cret")
	})
	cn := waitCanary(e, "web", "recording on-paused delivered", func(cn *v1alpha1.Canary) bool {
		c := meta.FindStatusCondition(cn.Status.Conditions, notify.ConditionDelivered)
		return sent(cn, notify.OnPaused, "hook") && c != nil && c.Status == metav1.ConditionTrue
	})
	if cn.Status.Phase != v1alpha1.CanaryPaused {
		t.Fatalf("phase %s, want Paused", cn.Status.Phase)
	}
	e.WaitEvent(notify.EventFailed)
	approve(e, "web", 1)
	waitCanary(e, "web", "rolled back by its failed check, and that notification recorded", func(cn *v1alpha1.Canary) bool {
		return cn.Status.Phase == v1alpha1.CanaryRolledBack && sent(cn, notify.OnRolledBack, "hook")
	})
	waitAccepted(e, rc, map[string]int{notify.OnStepStarted: 2, notify.OnPaused: 1, notify.OnRolledBack: 1})

	// Release 2: the check fixed, retried; paused at step 1 again, promoted, completed.
	e2eenv.Update(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), "web", func(cn *v1alpha1.Canary) {
		cn.Spec.Analysis = []v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")}
		cn.Spec.Retries++
		cn.Spec.ApprovedBatch, cn.Spec.Rollback = 0, false
	})
	waitAccepted(e, rc, map[string]int{notify.OnStepStarted: 3, notify.OnPaused: 2, notify.OnRolledBack: 1})
	approve(e, "web", 1)
	waitCanary(e, "web", "completed, and that notification recorded", func(cn *v1alpha1.Canary) bool {
		return cn.Status.Phase == v1alpha1.CanaryCompleted && sent(cn, notify.OnCompleted, "hook", "slack", "teams:releases")
	})

	// Steps 1, 2 and the final 100% of release 2 (step 3 of release 1 never started).
	want := map[string]int{notify.OnStepStarted: 5, notify.OnPaused: 2, notify.OnRolledBack: 1, notify.OnCompleted: 1}
	if got := rc.accepted(t); !reflect.DeepEqual(got, want) {
		t.Errorf("the webhook accepted %v, want %v", got, want)
	}
	checkShapes(t, rc.requests())
	checkNoSecret(e, rc, agent)
	for _, r := range rc.requests() {
		if r.Service == "hook" && r.Trigger() == notify.OnPaused && r.Body["command"] != "kubectl workload promote canary/web -n "+e.NS {
			t.Errorf("on-paused names command %v", r.Body["command"])
		}
	}
}

// checkShapes checks the Slack and Teams payloads against their documented shapes: Slack's
// message payload (text, Block Kit blocks), Teams Workflows' message with one Adaptive Card.
func checkShapes(t *testing.T, reqs []request) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range reqs {
		switch r.Service {
		case "slack":
			seen["slack"] = true
			blocks, _ := r.Body["blocks"].([]any)
			text, _ := r.Body["text"].(string)
			if !strings.Contains(text, "canary/web: release completed") || len(blocks) != 2 {
				t.Errorf("Slack payload %v", r.Body)
				continue
			}
			for i, typ := range []string{"header", "section"} {
				b, _ := blocks[i].(map[string]any)
				txt, _ := b["text"].(map[string]any)
				if b["type"] != typ || txt["text"] == "" || (txt["type"] != "plain_text" && txt["type"] != "mrkdwn") {
					t.Errorf("Slack block %d %v", i, b)
				}
			}
		case "teams":
			seen["teams"] = true
			atts, _ := r.Body["attachments"].([]any)
			if r.Body["type"] != "message" || len(atts) != 1 {
				t.Errorf("Teams payload %v", r.Body)
				continue
			}
			att, _ := atts[0].(map[string]any)
			card, _ := att["content"].(map[string]any)
			body, _ := card["body"].([]any)
			if att["contentType"] != "application/vnd.microsoft.card.adaptive" || card["type"] != "AdaptiveCard" ||
				card["$schema"] != "http://adaptivecards.io/schemas/adaptive-card.json" || card["version"] == nil || len(body) == 0 {
				t.Errorf("Teams attachment %v", att)
			}
		}
	}
	if !seen["slack"] || !seen["teams"] {
		t.Errorf("payloads seen: %v, want Slack and Teams", seen)
	}
}

// approve promotes the Canary's step k, as `kubectl workload promote` does.
func approve(e *e2eenv.Env, name string, k int32) {
	e.T.Helper()
	waitCanary(e, name, "waiting for promotion", func(cn *v1alpha1.Canary) bool {
		return cn.Status.Phase == v1alpha1.CanaryPaused && cn.Status.CurrentBatch == k
	})
	e2eenv.Update(e.T, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), name, func(cn *v1alpha1.Canary) { cn.Spec.ApprovedBatch = k })
}

// Events a person acts on: a check that cannot decide (its Prometheus is unreachable), then an
// abort; a step whose pods never become available within the progress deadline. Each is
// delivered once, from the namespace's subscriptions.
func TestEventsAPersonActsOn(t *testing.T) {
	e := e2eenv.Setup(t)
	rc := newReceiver(t)
	configure(e, rc)
	subscribe(e, "on-analysis-inconclusive.hook=", "on-aborted.hook=", "on-deadline-exceeded.hook=")
	startAgent(e)

	unreachable := v1alpha1.AnalysisCheck{Name: "errors", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](2),
		ConsecutiveErrorLimit: ptr.To[int32](0), SuccessCondition: "result < 1",
		Provider: v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: "http://127.0.0.1:1", Query: "vector(0)"}}}
	release(e, "undecided", "nginx:1.27", 0, nil, []v1alpha1.AnalysisCheck{unreachable},
		v1alpha1.CanaryStep{Replicas: intOrPercent(1), Analysis: []string{"errors"}})
	release(e, "late", "example.com/app:crashloop", 3, nil, nil, v1alpha1.CanaryStep{Replicas: intOrPercent(1)})

	waitCanary(e, "undecided", "recording on-analysis-inconclusive", func(cn *v1alpha1.Canary) bool {
		return sent(cn, notify.OnAnalysisInconclusive, "hook")
	})
	e2eenv.Update(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), "undecided", func(cn *v1alpha1.Canary) { cn.Spec.Rollback = true })
	waitCanary(e, "undecided", "recording on-aborted", func(cn *v1alpha1.Canary) bool { return sent(cn, notify.OnAborted, "hook") })
	waitCanary(e, "late", "recording on-deadline-exceeded", func(cn *v1alpha1.Canary) bool {
		return sent(cn, notify.OnDeadlineExceeded, "hook")
	})
	want := map[string]int{notify.OnAnalysisInconclusive: 1, notify.OnAborted: 1, notify.OnDeadlineExceeded: 1}
	if got := rc.accepted(t); !reflect.DeepEqual(got, want) {
		t.Errorf("the webhook accepted %v, want %v", got, want)
	}
}
