package analysis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// jobCheck runs a Job of image: kwok finishes pods of "job-succeed" images with exit code 0
// and of "job-fail" images with 1 (test/localcluster/stages.yaml).
func jobCheck(image string) *v1alpha1.AnalysisCheck {
	backoff := int32(0)
	return &v1alpha1.AnalysisCheck{
		Name: "smoke",
		Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{Template: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{
				BackoffLimit: &backoff,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "smoke", Image: image}},
				}},
			},
		}}},
	}
}

func TestJob(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  v1alpha1.AnalysisPhase
		value string
	}{
		{"example.com/smoke:job-succeed", v1alpha1.AnalysisSuccessful, "true"},
		{"example.com/smoke:job-fail", v1alpha1.AnalysisFailed, "false"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			e, owner := namespace(t)
			kube, ns := e.Kube, e.NS
			check := jobCheck(tc.image)
			target := analysis.Target{Namespace: ns, Owner: owner, Run: "release-1-smoke"}
			p, err := analysis.Env{Client: kube}.Provider(check, target)
			if err != nil {
				t.Fatal(err)
			}
			st := run(t, check, p)
			if st.Phase != tc.want || st.Count != 1 || st.Measurements[0].Value != tc.value {
				t.Fatalf("phase %s, measurements %v; want %s with one measurement of %s", st.Phase, values(st), tc.want, tc.value)
			}

			ctx := context.Background()
			job, err := kube.BatchV1().Jobs(ns).Get(ctx, "release-1-smoke-1", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the measurement's Job: %v", err)
			}
			if !metav1.IsControlledBy(job, &metav1.ObjectMeta{UID: owner.UID}) {
				t.Errorf("Job owners %+v, want the release", job.OwnerReferences)
			}

			if err := p.(*analysis.Job).Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			waitGone(t, kube, ns)
		})
	}
}

// waitGone waits until the namespace has no Job and no Job pod left.
func waitGone(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	e2eenv.WaitFor(t, context.Background(), "no Job and no Job pod left after Cleanup", func(ctx context.Context) (bool, string, error) {
		jobs, err1 := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		pods, err2 := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2), nil
		}
		var names []string
		for _, j := range jobs.Items {
			names = append(names, "job/"+j.Name)
		}
		for _, p := range pods.Items {
			names = append(names, "pod/"+p.Name)
		}
		return len(names) == 0, "left: " + strings.Join(names, " "), nil
	})
}
