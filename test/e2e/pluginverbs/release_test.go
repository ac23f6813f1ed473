package pluginverbs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// A whole canary release, as a release manager runs it: `kubectl workload status -w` is
// started in the background as soon as the Canary exists, with its output going to a pipe (a
// CI log, not a terminal); `promote` answers each of the release's manual gates (pauseType
// All: after batch 1 and after batch 2 of 3); the background status -w follows the release
// across both pauses (it does not stop at a pause without --success-on-pause) and exits 0
// when the release completes. Its output is one line per change, without escape sequences,
// and shows the batches progressing in order.
func TestCanaryReleaseFollowedByStatusWatch(t *testing.T) {
	e := setup(t)
	const name = "cart"
	stableLabels := map[string]string{"app": name, "track": "stable"}
	stable := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	stable.Spec.Replicas = ptr.To[int32](4)
	stable.Spec.Selector = &metav1.LabelSelector{MatchLabels: stableLabels}
	stable.Spec.Template = podTemplate(stableLabels, "nginx:1.26")
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("4 available stable pods", func() (bool, string) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 4, fmt.Sprintf("%+v", d.Status)
	})
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Replicas = 4
	c.Spec.StableRef.Name = name
	c.Spec.Canary.Name = name + "-canary"
	c.Spec.Canary.Template = podTemplate(map[string]string{"app": name, "track": "canary"}, "nginx:1.27")
	c.Spec.Batches = ptr.To[int32](3)
	c.Spec.PauseType = v1alpha1.PauseAll
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// status -w is started before the release begins: the agent is not running yet, so the
	// Canary has no status, and the first line says so.
	ref := "canary/" + name
	follow := e.run.Start("status", "-w", ref, "--timeout=5m")

	phase := func(want v1alpha1.CanaryPhase, batch int32) func() (bool, string) {
		return func() (bool, string) {
			got, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := got.Status
			return s.ObservedGeneration == got.Generation && s.Phase == want && s.CurrentBatch == batch,
				fmt.Sprintf("phase %s batch %d message %q", s.Phase, s.CurrentBatch, s.Message)
		}
	}
	// printed waits until the background status -w has printed a line starting with prefix:
	// it reports the release as it happens, not at its end.
	printed := func(prefix string) func() (bool, string) {
		return func() (bool, string) {
			lines := follow.Lines()
			return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) }), strings.Join(lines, " | ")
		}
	}
	e.Eventually("status -w to print the Canary without status", printed(ref+" Progressing: waiting for the workload-agent to report status"))
	e.startAgent("canary")
	for batch := int32(1); batch <= 2; batch++ {
		e.Eventually(fmt.Sprintf("paused at batch %d", batch), phase(v1alpha1.CanaryPaused, batch))
		e.Eventually(fmt.Sprintf("status -w to show the pause at batch %d", batch), printed(fmt.Sprintf("%s Paused: batch %d of 3,", ref, batch)))
		// A one-shot status at the gate: paused is not done (exit 3), with a line per batch.
		r := e.plugin("status", ref)
		if r.Code != 3 || !strings.HasPrefix(r.Out, fmt.Sprintf("%s Paused: batch %d of 3,", ref, batch)) ||
			!regexp.MustCompile(fmt.Sprintf(`(?m)^  > batch %d/3 .* Paused$`, batch)).MatchString(r.Out) {
			t.Fatalf("status at the gate of batch %d: exit %d, output:\n%s", batch, r.Code, r.Out)
		}
		e.ok(fmt.Sprintf("%s promoted: batch %d of 3 approved", ref, batch), "promote", ref)
	}

	code, stderr := follow.Wait(t, e2eenv.Safety)
	lines := follow.Lines()
	if code != 0 || stderr != "" {
		t.Fatalf("status -w exited %d (stderr %q) when the release ended; it printed:\n%s", code, stderr, strings.Join(lines, "\n"))
	}
	if ok, state := phase(v1alpha1.CanaryCompleted, 3)(); !ok {
		t.Fatalf("status -w exited 0 but the Canary is not complete: %s", state)
	}
	checkFollowedRelease(t, ref, 3, lines)

	// The tree after the release: every batch completed, every pod on the canary Deployment.
	r := e.ok(ref, "get", ref)
	for b := 1; b <= 3; b++ {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^│   [├└]── batch %d +Completed `, b)).MatchString(r.Out) {
			t.Errorf("get %s does not show batch %d completed:\n%s", ref, b, r.Out)
		}
	}
	if !regexp.MustCompile(`(?m)^└── deploy/` + name + `-canary +4/4 `).MatchString(r.Out) {
		t.Errorf("get %s does not show the canary Deployment with 4 ready pods:\n%s", ref, r.Out)
	}
}

// followedLine is a line of status -w without a terminal: "canary/NAME PHASE: SUMMARY".
var followedLine = regexp.MustCompile(`^(\S+) (\w+): (.*)$`)

var batchOf = regexp.MustCompile(`^batch (\d+) of (\d+),`)

// checkFollowedRelease checks what status -w printed while following a canary release of n
// batches with a pause after every batch but the last, from before it started to its end: one
// line per change (never twice the same in a row, no escape sequences), the batch never going
// backwards (lines of a status older than the spec, "waiting for the workload-agent …", name no
// batch), each batch seen in progress, a pause at each gate before the next batch starts, and
// the release completed on the last line (and only there).
func checkFollowedRelease(t *testing.T, ref string, n int, lines []string) {
	t.Helper()
	fail := func(format string, args ...interface{}) {
		t.Helper()
		t.Fatalf(format+"\nstatus -w printed:\n%s", append(args, strings.Join(lines, "\n"))...)
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], ref+" Progressing: waiting for the workload-agent to report status") {
		fail("status -w did not start before the release: its first line is not the Canary without status")
	}
	type step struct {
		phase string
		batch int
	}
	var steps []step
	last := 0
	for i, l := range lines {
		if strings.ContainsRune(l, '\x1b') {
			fail("line %d has an escape sequence although the output is not a terminal: %q", i+1, l)
		}
		if i > 0 && l == lines[i-1] {
			fail("line %d repeats the line before it", i+1)
		}
		m := followedLine.FindStringSubmatch(l)
		if m == nil || m[1] != ref {
			fail("line %d is not a status line of %s: %q", i+1, ref, l)
		}
		s := step{phase: m[2]}
		if b := batchOf.FindStringSubmatch(m[3]); b != nil {
			s.batch, _ = strconv.Atoi(b[1])
			if b[2] != strconv.Itoa(n) {
				fail("line %d: %s batches, want %d", i+1, b[2], n)
			}
			if s.batch < last {
				fail("line %d goes back from batch %d to batch %d", i+1, last, s.batch)
			}
			last = s.batch
		} else if !strings.HasPrefix(m[3], "waiting for the workload-agent ") {
			fail("line %d names no batch", i+1)
		}
		if s.phase == "Completed" && i != len(lines)-1 {
			fail("line %d says Completed but status -w went on", i+1)
		}
		switch s.phase {
		case "Progressing", "Paused", "Completed":
		default:
			fail("line %d: phase %s in a release that only progresses, pauses and completes", i+1, s.phase)
		}
		steps = append(steps, s)
	}
	if last := steps[len(steps)-1]; last.phase != "Completed" || last.batch != n {
		fail("the last line is not the release completed at batch %d of %d", n, n)
	}
	// Every batch is seen in progress; every batch but the last is then paused at, and the pause
	// comes before the next batch starts.
	at := func(phase string, batch int) int {
		return slices.Index(steps, step{phase, batch})
	}
	for b := 1; b <= n; b++ {
		if at("Progressing", b) < 0 {
			fail("batch %d is never shown in progress", b)
		}
		if b == n {
			continue
		}
		paused := at("Paused", b)
		if paused < 0 {
			fail("no pause shown at the gate of batch %d", b)
		}
		if next := at("Progressing", b+1); next < paused {
			fail("batch %d is shown in progress before the pause at batch %d", b+1, b)
		}
	}
}
