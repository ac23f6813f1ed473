// Package analysis proves pkg/analysis against real parts: a Prometheus built from its Go
// module scraping test/exporter (test/promharness), and the local control plane, whose
// kube-controller-manager runs Jobs and whose kwok stages finish Job pods and crash-loop pods
// of chosen images (test/localcluster/stages.yaml).
package analysis

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
}

// decideTimeout bounds one check from start to verdict: checks here measure every second a
// few times.
const decideTimeout = 2 * time.Minute

// run steps check with p as a controller would (calling again when the verdict says) until
// it is decided, and returns the final status.
func run(t *testing.T, check *v1alpha1.AnalysisCheck, p analysis.Provider) v1alpha1.AnalysisCheckStatus {
	t.Helper()
	r, err := analysis.NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), decideTimeout)
	defer cancel()
	var st v1alpha1.AnalysisCheckStatus
	for {
		var v analysis.Verdict
		st, v = r.Step(ctx, check, &st, p, time.Now())
		if v.Decided() {
			t.Logf("check %s: %s: %s; measurements %v", check.Name, st.Phase, st.Message, values(st))
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("check %s undecided after %v: %+v", check.Name, decideTimeout, st)
		case <-time.After(time.Until(v.NextMeasurement)):
		}
	}
}

func values(st v1alpha1.AnalysisCheckStatus) []string {
	var out []string
	for _, m := range st.Measurements {
		s := string(m.Phase) + " " + m.Value
		if m.Message != "" {
			s += " (" + m.Message + ")"
		}
		out = append(out, s)
	}
	return out
}

// namespace makes a namespace for one test (e2eenv.Setup: deleted when it ends), and a ConfigMap
// in it that stands for the release owning what checks create.
func namespace(t *testing.T) (*e2eenv.Env, metav1.OwnerReference) {
	t.Helper()
	e := e2eenv.Setup(t)
	cm := e2eenv.Create(t, e.Ctx, e.Kube.CoreV1().ConfigMaps(e.NS), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "release"}})
	return e, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
}
