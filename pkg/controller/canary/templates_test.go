package canary

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// templateStores feeds the controller's template listers by hand.
type templateStores struct{ namespaced, cluster cache.Indexer }

func withTemplates(f *fixture) templateStores {
	s := templateStores{
		namespaced: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		cluster:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	f.ctrl.templates = templateSource{
		namespaced: listers.NewAnalysisTemplateLister(s.namespaced),
		cluster:    listers.NewClusterAnalysisTemplateLister(s.cluster),
	}
	return s
}

// healthTemplate is a ClusterAnalysisTemplate "health" whose one check, "pods", judges the
// canary's pods against the argument maxRestarts.
func healthTemplate() *v1alpha1.ClusterAnalysisTemplate {
	return &v1alpha1.ClusterAnalysisTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "health"},
		Spec: v1alpha1.AnalysisTemplateSpec{
			Args: []v1alpha1.AnalysisArg{{Name: "maxRestarts"}},
			Checks: []v1alpha1.AnalysisCheck{{Name: "pods",
				SuccessCondition: "result.pods > 0 && result.restarts <= {{args.maxRestarts}}",
				Provider:         v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{MaxRestarts: 100}}}},
		},
	}
}

// templateCanary releases 2 canary pods in step 1 under entry "slo", which runs the
// ClusterAnalysisTemplate "health" with args.
func templateCanary(args ...v1alpha1.AnalysisArgValue) *v1alpha1.Canary {
	return stepsCanary(func(s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{{Name: "slo",
			TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: "health"},
			Args:        args}}
	}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Analysis: []string{"slo"}})
}

func analysisResolved(t *testing.T, c *v1alpha1.Canary, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	got := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAnalysisResolved)
	if got == nil || got.Status != status || got.Reason != reason || !strings.Contains(got.Message, message) {
		t.Fatalf("AnalysisResolved condition %+v; want %s, %s, a message containing %q", got, status, reason, message)
	}
}

// A step naming a template entry runs the template's checks with the arguments substituted;
// status says which template each check came from.
func TestTemplateChecksRunWithTheirArguments(t *testing.T) {
	for _, tc := range []struct {
		name       string
		restarts   int32
		wantAbort  bool
		wantStates []v1alpha1.BatchState
	}{
		{"within the argument", 1, false, []v1alpha1.BatchState{C, U}},
		{"beyond the argument", 2, true, []v1alpha1.BatchState{Bk, P}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, templateCanary(v1alpha1.AnalysisArgValue{Name: "maxRestarts", Value: ptr.To("1")}), newStable(10))
			stores := withTemplates(f)
			if err := stores.cluster.Add(healthTemplate()); err != nil {
				t.Fatal(err)
			}
			f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, tc.restarts)
			startStep1(f)
			if tc.wantAbort {
				f.step(patchStable+replicas(10), writeStatus)
			} else {
				f.step(patchCanary+replicas(10), writeStatus)
			}
			c := f.canary()
			st := c.Status.Analysis
			if len(st) != 1 || st[0].Name != "slo.pods" || st[0].Template != "ClusterAnalysisTemplate/health" {
				t.Fatalf("analysis %+v, want one check slo.pods from ClusterAnalysisTemplate/health", st)
			}
			if got := c.Status.Abort != nil; got != tc.wantAbort {
				t.Errorf("aborted %v, want %v (abort %+v)", got, tc.wantAbort, c.Status.Abort)
			}
			if tc.wantAbort && c.Status.Abort.Check != "slo.pods" {
				t.Errorf("abort names check %q", c.Status.Abort.Check)
			}
			analysisResolved(t, c, metav1.ConditionTrue, v1alpha1.ReasonResolved, "")
		})
	}
}

// A missing template holds the step, with a condition naming it, until it exists: the step
// never passes without it, however long it waits.
func TestMissingTemplateWaitsWithACondition(t *testing.T) {
	f := newFixture(t, templateCanary(v1alpha1.AnalysisArgValue{Name: "maxRestarts", Value: ptr.To("0")}), newStable(10))
	stores := withTemplates(f)
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 0)
	startStep1(f)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	analysisResolved(t, c, metav1.ConditionFalse, v1alpha1.ReasonAnalysisTemplateNotFound, "analysis slo: ClusterAnalysisTemplate health not found")
	if st := c.Status.Analysis; len(st) != 1 || st[0].Name != "slo" || st[0].Phase != v1alpha1.AnalysisRunning || st[0].Count != 0 {
		t.Fatalf("analysis %+v, want slo Running and unmeasured", st)
	}
	f.clock.Step(24 * 3600e9)
	f.settled()
	f.status(v1alpha1.CanaryProgressing, 1, Bk, P)

	if err := stores.cluster.Add(healthTemplate()); err != nil {
		t.Fatal(err)
	}
	f.step(writeStatus) // the step starts again with the template's checks
	f.step(patchCanary+replicas(10), writeStatus)
	c = f.status(v1alpha1.CanaryProgressing, 2, C, U)
	analysisResolved(t, c, metav1.ConditionTrue, v1alpha1.ReasonResolved, "")
}

// An argument the template declares without a default and the Canary leaves unset holds the
// step with a condition naming the argument; so does a Canary field that is still empty.
func TestUnsetArgumentWaitsWithACondition(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []v1alpha1.AnalysisArgValue
		want string
	}{
		{"not given", nil, "argument maxRestarts has no value"},
		{"from an empty field", []v1alpha1.AnalysisArgValue{{Name: "maxRestarts",
			ValueFrom: &v1alpha1.AnalysisArgSource{FieldPath: "status.target.updateRevision"}}},
			"argument maxRestarts (from status.target.updateRevision, which is empty) has no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, templateCanary(tc.args...), newStable(10))
			stores := withTemplates(f)
			if err := stores.cluster.Add(healthTemplate()); err != nil {
				t.Fatal(err)
			}
			f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 0)
			startStep1(f)
			f.step(writeStatus)
			c := f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
			analysisResolved(t, c, metav1.ConditionFalse, v1alpha1.ReasonArgumentUnset, tc.want)
			if st := c.Status.Analysis; len(st) != 1 || !strings.Contains(st[0].Message, tc.want) {
				t.Errorf("analysis %+v, want a message naming the argument", st)
			}
			f.clock.Step(24 * 3600e9)
			f.settled()
		})
	}
}

// An argument value that would change the query's meaning is refused, never run.
func TestArgumentBreakingAQueryIsRefused(t *testing.T) {
	f := newFixture(t, templateCanary(v1alpha1.AnalysisArgValue{Name: "maxRestarts", Value: ptr.To("0 || true")}), newStable(10))
	stores := withTemplates(f)
	if err := stores.cluster.Add(healthTemplate()); err != nil {
		t.Fatal(err)
	}
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 5)
	startStep1(f)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	analysisResolved(t, c, metav1.ConditionFalse, v1alpha1.ReasonInvalidArgument, `"0 || true" stands outside quotes`)
}

// A step whose templates expand to more checks than status can hold is refused as an invalid
// spec, not written half.
func TestTooManyTemplateChecksIsInvalid(t *testing.T) {
	tpl := healthTemplate()
	for i := 1; len(tpl.Spec.Checks) < v1alpha1.MaxTemplateChecks; i++ {
		c := tpl.Spec.Checks[0]
		c.Name = fmt.Sprintf("pods-%d", i)
		tpl.Spec.Checks = append(tpl.Spec.Checks, c)
	}
	cn := templateCanary(v1alpha1.AnalysisArgValue{Name: "maxRestarts", Value: ptr.To("0")})
	var entries []string
	for i := 0; i*v1alpha1.MaxTemplateChecks <= v1alpha1.MaxStepChecks; i++ {
		e := cn.Spec.Analysis[0]
		e.Name = fmt.Sprintf("slo-%d", i)
		cn.Spec.Analysis = append(cn.Spec.Analysis, e)
		entries = append(entries, e.Name)
	}
	cn.Spec.Steps[0].Analysis = entries
	f := newFixture(t, cn, newStable(10))
	stores := withTemplates(f)
	if err := stores.cluster.Add(tpl); err != nil {
		t.Fatal(err)
	}
	f.step(addFinalizer, writeStatus)
	c := f.canary()
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Reason != v1alpha1.ReasonInvalidSpec ||
		!strings.Contains(d.Message, "step 1 runs 80 checks once its templates are expanded, more than 64") {
		t.Fatalf("Degraded %+v", d)
	}
}
