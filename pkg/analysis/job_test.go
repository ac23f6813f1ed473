package analysis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var owner = metav1.OwnerReference{APIVersion: "apps.workload.dev/v1alpha1", Kind: "Canary", Name: "web", UID: types.UID("uid-web")}

func jobProvider(client *fake.Clientset) *Job {
	return &Job{
		Client: client, Namespace: "ns", Owner: owner, Run: "web-2-smoke",
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "smoke", Image: "example.com/smoke:job-succeed"}},
			}}},
		},
	}
}

func finishedJob(name string, cond batchv1.JobConditionType, ownerUID types.UID) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Canary", Name: "web", UID: ownerUID, Controller: ptr(true)}}}}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
	}
	return j
}

func actionsOf(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		switch a := a.(type) {
		case k8stesting.GetAction:
			s += " " + a.GetName()
		case k8stesting.CreateAction:
			s += " " + a.GetObject().(*batchv1.Job).Name
		case k8stesting.DeleteCollectionAction:
			s += " " + a.GetListRestrictions().Labels.String()
		}
		out = append(out, s)
	}
	return out
}

func TestJobMeasure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		existing    []runtime.Object
		want        any
		wantErr     string
		wantActions []string
	}{
		{name: "missing: created, in flight", wantErr: ErrInFlight.Error(), wantActions: []string{"get jobs web-2-smoke-3", "create jobs web-2-smoke-3"}},
		{name: "running: in flight", existing: []runtime.Object{finishedJob("web-2-smoke-3", "", owner.UID)}, wantErr: ErrInFlight.Error(), wantActions: []string{"get jobs web-2-smoke-3"}},
		{name: "complete passes", existing: []runtime.Object{finishedJob("web-2-smoke-3", batchv1.JobComplete, owner.UID)}, want: true, wantActions: []string{"get jobs web-2-smoke-3"}},
		{name: "failed does not", existing: []runtime.Object{finishedJob("web-2-smoke-3", batchv1.JobFailed, owner.UID)}, want: false, wantActions: []string{"get jobs web-2-smoke-3"}},
		{name: "someone else's job is an error", existing: []runtime.Object{finishedJob("web-2-smoke-3", batchv1.JobComplete, "other")}, wantErr: "job web-2-smoke-3 exists and is not owned by Canary web", wantActions: []string{"get jobs web-2-smoke-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.existing...)
			got, err := jobProvider(client).Measure(context.Background(), 3)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
			if a := actionsOf(client); fmt.Sprint(a) != fmt.Sprint(tc.wantActions) {
				t.Errorf("actions %q, want %q", a, tc.wantActions)
			}
		})
	}
}

func TestJobCreated(t *testing.T) {
	client := fake.NewClientset()
	p := jobProvider(client)
	if _, err := p.Measure(context.Background(), 1); err != ErrInFlight {
		t.Fatalf("first measure: %v, want ErrInFlight", err)
	}
	job, err := client.BatchV1().Jobs("ns").Get(context.Background(), "web-2-smoke-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := job.OwnerReferences
	if len(ref) != 1 || ref[0].UID != owner.UID || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("owner references %+v, want the Canary as controller", ref)
	}
	if job.Labels["team"] != "a" || job.Labels[LabelAnalysisRun] != p.runLabel() || job.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent {
		t.Errorf("labels %v: want the template's, the run and managed-by", job.Labels)
	}
	if job.Spec.Template.Spec.Containers[0].Image != "example.com/smoke:job-succeed" {
		t.Errorf("pod template not taken from the check: %+v", job.Spec.Template.Spec)
	}
	if p.Template.Labels[LabelAnalysisRun] != "" {
		t.Error("the check's template was changed")
	}
}

func TestJobCleanup(t *testing.T) {
	client := fake.NewClientset()
	p := jobProvider(client)
	if err := p.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete-collection jobs " + LabelAnalysisRun + "=" + p.runLabel()}
	if a := actionsOf(client); fmt.Sprint(a) != fmt.Sprint(want) {
		t.Errorf("actions %q, want %q", a, want)
	}
}

func TestJobName(t *testing.T) {
	short := (&Job{Run: "web-2-smoke"}).JobName(12)
	if short != "web-2-smoke-12" {
		t.Errorf("short run: %q", short)
	}
	long := strings.Repeat("a", 70)
	n1, n2 := (&Job{Run: long}).JobName(1), (&Job{Run: long + "b"}).JobName(1)
	if len(n1) > 63 || !strings.HasSuffix(n1, "-1") || n1 == n2 {
		t.Errorf("long runs: %q and %q, want distinct names of at most 63 characters ending in -1", n1, n2)
	}
}
