package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// LabelAnalysisRun is on every Job an analysis started: the run it belongs to (a hash of
// Job.Run), so that Cleanup finds them all.
const LabelAnalysisRun = "analysis.apps.workload.dev/run"

// Job measures by running a Job per measurement, named after the run and the ordinal, owned by
// Owner. A Job that completed passes (true); one that failed does not (false).
type Job struct {
	Client kubeclient.Interface
	// Jobs, when set, is read before the API server (a controller's informer cache).
	Jobs      batchlisters.JobLister
	Namespace string
	Owner     metav1.OwnerReference
	// Run names this run of the check, unique among runs in the namespace, e.g.
	// "<canary>-<step>-<check>"; Job names and the run label derive from it.
	Run      string
	Template batchv1.JobTemplateSpec
}

// Measure creates the ordinal's Job if it does not exist and reports its outcome once it
// finished; until then it returns ErrInFlight.
func (j *Job) Measure(ctx context.Context, ordinal int32) (any, error) {
	name := j.JobName(ordinal)
	job, err := j.get(ctx, name)
	if apierrors.IsNotFound(err) {
		_, err = j.Client.BatchV1().Jobs(j.Namespace).Create(ctx, j.newJob(name), metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil, ErrInFlight
		}
	}
	if err != nil {
		return nil, fmt.Errorf("analysis job %s: %v", name, err)
	}
	if !metav1.IsControlledBy(job, &metav1.ObjectMeta{UID: j.Owner.UID}) {
		return nil, fmt.Errorf("job %s exists and is not owned by %s %s", name, j.Owner.Kind, j.Owner.Name)
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return false, nil
		}
	}
	return nil, ErrInFlight
}

func (j *Job) get(ctx context.Context, name string) (*batchv1.Job, error) {
	if j.Jobs != nil {
		job, err := j.Jobs.Jobs(j.Namespace).Get(name)
		if !apierrors.IsNotFound(err) {
			return job, err
		}
	}
	return j.Client.BatchV1().Jobs(j.Namespace).Get(ctx, name, metav1.GetOptions{})
}

func (j *Job) newJob(name string) *batchv1.Job {
	t := j.Template.DeepCopy()
	owner := j.Owner
	owner.Controller, owner.BlockOwnerDeletion = ptr(true), ptr(true)
	job := &batchv1.Job{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	job.Name, job.GenerateName, job.Namespace = name, "", j.Namespace
	job.OwnerReferences = []metav1.OwnerReference{owner}
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[LabelAnalysisRun] = j.runLabel()
	job.Labels[appsv1alpha1.LabelManagedBy] = appsv1alpha1.ManagedByAgent
	return job
}

// JobName is the name of the ordinal's Job: the run and the ordinal, shortened with a hash of
// both when too long for a Job (whose name also labels its pods: at most 63 characters).
func (j *Job) JobName(ordinal int32) string {
	suffix := "-" + strconv.Itoa(int(ordinal))
	name := j.Run + suffix
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return j.Run[:63-len(suffix)-9] + "-" + hex.EncodeToString(sum[:])[:8] + suffix
}

func (j *Job) runLabel() string {
	sum := sha256.Sum256([]byte(j.Namespace + "/" + j.Run))
	return hex.EncodeToString(sum[:])[:16]
}

// Cleanup deletes every Job of this run, with their pods. Call it when the run ends (the step
// moves on, the release rolls back); Jobs still running are stopped.
func (j *Job) Cleanup(ctx context.Context) error {
	policy := metav1.DeletePropagationBackground
	return j.Client.BatchV1().Jobs(j.Namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{PropagationPolicy: &policy},
		metav1.ListOptions{LabelSelector: LabelAnalysisRun + "=" + j.runLabel()})
}

func ptr[T any](v T) *T { return &v }
