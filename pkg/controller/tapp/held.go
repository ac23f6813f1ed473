package tapp

import (
	"fmt"

	appsv1listers "k8s.io/client-go/listers/apps/v1"
	"k8s.io/utils/ptr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// An instance below the partition that has no pod (lost, killed and started again, deleted by
// a Canary that moves a scaled-up TApp back to its step's share) is made from the templates of
// status.currentRevision, the revision every instance ran when the last rollout completed, as a
// StatefulSet makes an ordinal below its partition from its current revision: the partition
// then keeps the ids below it on the old templates whatever happens to their pods (docs/tapp.md,
// "Behaviour"). Without it a deleted instance below the partition came back on the new template,
// and nothing could move an instance back under a partition.

// heldTemplates returns the templates of t's current revision as a template set (nil when there
// is none yet, or with an error when it cannot be read: the instance's own template then). The
// revision is read from the agent's ControllerRevision cache, and must be t's. It is read even
// when the status names it the updated one too: in the first sync after a template change the
// status still does, and the revision is the one before the change, the right one.
func heldTemplates(t *appsv1alpha1.TApp, revisions appsv1listers.ControllerRevisionLister) (*templateSet, error) {
	name := t.Status.CurrentRevision
	if revisions == nil || name == "" {
		return nil, nil
	}
	rev, err := revisions.ControllerRevisions(t.Namespace).Get(name)
	if err != nil {
		return nil, fmt.Errorf("reading current revision %s: %w", name, err)
	}
	if !metav1.IsControlledBy(rev, t) {
		return nil, fmt.Errorf("current revision %s does not belong to the TApp", name)
	}
	data, err := revisiondata.Decode(rev.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("current revision %s: %w", name, err)
	}
	tpl, err := data.PodTemplate()
	if err != nil {
		return nil, fmt.Errorf("current revision %s: %w", name, err)
	}
	pool, err := data.Pool()
	if err != nil {
		return nil, fmt.Errorf("current revision %s: %w", name, err)
	}
	cp := t.DeepCopy()
	cp.Spec.Template, cp.Spec.TemplatePool = *tpl, pool
	return newTemplateSet(cp), nil
}

// forNewInstance returns the template a new pod of instance id is made from: below the
// partition, the instance's template in the current revision (see heldTemplates); else, or
// when that revision cannot be read or has no such template, the instance's own template.
func (s *templateSet) forNewInstance(id int) (*templateInfo, error) {
	own, err := s.forInstance(id)
	if err != nil || id >= int(ptr.Deref(s.tapp.Spec.UpdateStrategy.Partition, 0)) {
		return own, err
	}
	if !s.heldLoaded {
		s.heldLoaded = true
		s.held, s.heldErr = heldTemplates(s.tapp, s.revisions)
	}
	if s.held == nil {
		return own, nil
	}
	held, err := s.held.forInstance(id)
	if err != nil {
		return own, nil
	}
	return held, nil
}
