package uniteddeployment

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Subset is one subset workload as read from an informer cache, in the terms the controller
// works with whatever its kind.
type Subset struct {
	// Object is the cached workload; it must not be mutated.
	Object metav1.Object
	// SubsetName is the value of its LabelSubsetName label.
	SubsetName string
	// Revision is the value of its LabelRevision label: the ControllerRevision its template was
	// made from.
	Revision string
	// SubsetHash is its appsv1alpha1.AnnotationSubsetHash annotation.
	SubsetHash string
	// Replicas is its spec.replicas.
	Replicas int32
	// Status is the workload's own counts of its pods.
	Status workloadStatus
	// kind is the subset kind that listed it (for a member's workload, that member's instance),
	// which writes it; nil in tests that build observations by hand (the plan's kind then).
	kind workloadKind
	// Cluster is the member cluster it runs in (its ClusterProfile's namespace/name), empty on
	// the hub.
	Cluster string
}

// workloadStatus is a workload's own counts of its pods, from its status.
type workloadStatus struct {
	replicas, ready, updated int32
	// updatedReady is the number of its pods both updated and ready, which no kind's status
	// gives: exact once every pod is updated, else a lower bound (workloadCounts).
	updatedReady int32
}

// workloadCounts makes a workload's counts from its status: replicas, ready, updated pods,
// whether every pod is known to be updated (then updatedReady is its ready pods), and whether
// the status describes the workload's current spec (observedGeneration); while it does not,
// its updated pods are those of the spec before and count for nothing. With some pods not
// updated, which of them are ready is not in the status: updatedReady is then the least it can
// be (updated + ready - replicas), so that a release's wave is never passed on pods that may
// not be ready. The exact count would need the member's pods or, for a Deployment, its new
// ReplicaSet, which the member's identity is not granted (docs/architecture.md, "Fleet: member
// clusters").
func workloadCounts(replicas, ready, updated int32, allUpdated, observed bool) workloadStatus {
	w := workloadStatus{replicas: replicas, ready: ready}
	if !observed {
		return w
	}
	w.updated = updated
	if allUpdated || updated >= replicas {
		w.updatedReady = min(updated, ready)
	} else {
		w.updatedReady = max(0, updated+ready-replicas)
	}
	return w
}

// SubsetSpec is what the controller wants of one subset workload.
type SubsetSpec struct {
	// Subset is the topology entry (name, nodeSelectorTerm, tolerations).
	Subset *appsv1alpha1.Subset
	// Replicas allocated to the subset.
	Replicas int32
	// Partition is the number of pods kept on their old revision, already capped at Replicas.
	Partition int32
	// Paused stops every further update of the subset's pods.
	Paused bool
	// Revision is the updated revision: the name of the ControllerRevision of spec.template.
	Revision string
	// SubsetHash is the hash of Subset's nodeSelectorTerm and tolerations.
	SubsetHash string
	// ApplyTemplate tells Build to write spec.template (with the subset's topology) and Revision
	// into an existing workload. When false, only replicas, partition and paused are written and
	// the workload keeps the template it has. A new workload always gets the template.
	ApplyTemplate bool
}

// subsetPrefix is the generateName of a subset's workloads.
func subsetPrefix(ud *appsv1alpha1.UnitedDeployment, subset string) string {
	return fmt.Sprintf("%s-%s-", ud.Name, subset)
}

// ownedSelector selects every workload and pod of ud.
func ownedSelector(ud *appsv1alpha1.UnitedDeployment) labels.Selector {
	return labels.SelectorFromSet(labels.Set{appsv1alpha1.LabelUnitedDeploymentName: ud.Name})
}

// controllerRef is the owner reference subset workloads and revisions carry.
func controllerRef(ud *appsv1alpha1.UnitedDeployment) *metav1.OwnerReference {
	return metav1.NewControllerRef(ud, appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment"))
}

// workloadLabels are the labels of a subset workload: the template's, then ours.
func workloadLabels(tmpl map[string]string, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) map[string]string {
	l := make(map[string]string, len(tmpl)+4)
	for k, v := range tmpl {
		l[k] = v
	}
	l[appsv1alpha1.LabelManagedBy] = appsv1alpha1.ManagedByAgent
	l[appsv1alpha1.LabelUnitedDeploymentName] = ud.Name
	l[appsv1alpha1.LabelSubsetName] = spec.Subset.Name
	l[appsv1alpha1.LabelRevision] = spec.Revision
	return l
}

// workloadAnnotations are the annotations of a subset workload: the template's, then the
// subset hash.
func workloadAnnotations(tmpl map[string]string, spec *SubsetSpec) map[string]string {
	a := make(map[string]string, len(tmpl)+1)
	for k, v := range tmpl {
		a[k] = v
	}
	a[appsv1alpha1.AnnotationSubsetHash] = spec.SubsetHash
	return a
}

// mergeLabels sets every entry of add into *dst (allocating it when nil).
func mergeLabels(dst *map[string]string, add map[string]string) {
	if *dst == nil {
		*dst = make(map[string]string, len(add))
	}
	for k, v := range add {
		(*dst)[k] = v
	}
}

// subsetSelector is the selector of a subset workload: ud's selector narrowed to the subset's
// pods. It never contains the revision, so it does not change when the template does.
func subsetSelector(ud *appsv1alpha1.UnitedDeployment, subset string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	if ud.Spec.Selector != nil {
		sel = ud.Spec.Selector.DeepCopy()
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1alpha1.LabelUnitedDeploymentName] = ud.Name
	sel.MatchLabels[appsv1alpha1.LabelSubsetName] = subset
	return sel
}

// preparePodTemplate adds our labels to a pod template (so that the agent's managed-by pod
// informer sees the pods and the controller can count them per subset and revision) and merges
// the subset's topology into it.
func preparePodTemplate(t *corev1.PodTemplateSpec, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	mergeLabels(&t.Labels, map[string]string{
		appsv1alpha1.LabelManagedBy:            appsv1alpha1.ManagedByAgent,
		appsv1alpha1.LabelUnitedDeploymentName: ud.Name,
		appsv1alpha1.LabelSubsetName:           spec.Subset.Name,
		appsv1alpha1.LabelRevision:             spec.Revision,
	})
	mergeNodeSelectorTerm(&t.Spec, spec.Subset.NodeSelectorTerm)
	t.Spec.Tolerations = append(t.Spec.Tolerations, spec.Subset.Tolerations...)
}

// mergeNodeSelectorTerm merges term into the pod's required node affinity: its requirements are
// ANDed into every existing term (the terms themselves are ORed, so each alternative must also
// satisfy the subset), or it becomes the only term when there is none.
func mergeNodeSelectorTerm(pod *corev1.PodSpec, term corev1.NodeSelectorTerm) {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return
	}
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	if pod.Affinity.NodeAffinity == nil {
		pod.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{*term.DeepCopy()}
		return
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		c := term.DeepCopy()
		t.MatchExpressions = append(t.MatchExpressions, c.MatchExpressions...)
		t.MatchFields = append(t.MatchFields, c.MatchFields...)
	}
}

// subsetHash hashes the parts of a topology entry that go into the pod template.
func subsetHash(s *appsv1alpha1.Subset) string {
	data, err := json.Marshal(struct {
		T corev1.NodeSelectorTerm `json:"t"`
		O []corev1.Toleration     `json:"o,omitempty"`
	}{s.NodeSelectorTerm, s.Tolerations})
	if err != nil {
		// Cannot happen for these types; a constant keeps the workload from flapping.
		return "0"
	}
	h := fnv.New32a()
	h.Write(data)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// newSubset fills the common fields of a Subset from a workload's metadata.
func newSubset(obj metav1.Object, replicas *int32) *Subset {
	s := &Subset{
		Object:     obj,
		SubsetName: obj.GetLabels()[appsv1alpha1.LabelSubsetName],
		Revision:   obj.GetLabels()[appsv1alpha1.LabelRevision],
		SubsetHash: obj.GetAnnotations()[appsv1alpha1.AnnotationSubsetHash],
		Replicas:   appsv1alpha1.ReplicasOrDefault(replicas),
	}
	return s
}

// sortSubsets orders workloads oldest first (then by name), so that the one kept among
// duplicates is the oldest.
func sortSubsets(subsets []*Subset) {
	sort.SliceStable(subsets, func(i, j int) bool {
		a, b := subsets[i].Object, subsets[j].Object
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return a.GetName() < b.GetName()
	})
}

// deleteOptions guards a delete with the object's UID, so a workload re-created under the same
// name is never deleted by mistake.
func deleteOptions(obj metav1.Object) metav1.DeleteOptions {
	uid := obj.GetUID()
	if uid == "" {
		return metav1.DeleteOptions{}
	}
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// controlledAndLive filters objects controlled by ud and not being deleted.
func controlledAndLive(obj metav1.Object, ud *appsv1alpha1.UnitedDeployment) bool {
	return obj.GetDeletionTimestamp() == nil && metav1.IsControlledBy(obj, ud)
}
