// Package revision keeps the ControllerRevision history of a controller's template, in the way
// the StatefulSet and DaemonSet controllers do: one ControllerRevision per distinct template,
// named <parent>-<hash>, a collision count mixed into the hash when a name is taken by a
// revision with other data, an equal older revision reused (its revision number bumped) instead
// of a new one being created, and the history truncated to a limit without ever removing a
// revision still in use.
package revision

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// HashLabel is the label holding a revision's hash (the suffix of its name).
const HashLabel = "controller.kubernetes.io/hash"

// maxPrefixLen keeps <prefix>-<hash> within the 253 characters of a DNS subdomain.
const maxPrefixLen = 223

// Name returns the name of the revision of parent prefix with the given hash.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefixLen {
		prefix = prefix[:maxPrefixLen]
	}
	return prefix + "-" + hash
}

// Hash hashes a revision's data with the collision count (nil counts as 0). Two revisions with
// the same data and collision count have the same hash; a different collision count gives a
// different hash, which is how a name collision is resolved.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32a()
	h.Write(data)
	if collisionCount != nil && *collisionCount != 0 {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(*collisionCount))
		h.Write(b[:])
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// New returns (without creating it) the revision of parent holding data, with the given revision
// number, labels and collision count. It is named Name(parent name, Hash(data, collisionCount)),
// labelled with HashLabel and controlled by parent.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, labels map[string]string, data []byte, number int64, collisionCount *int32) *appsv1.ControllerRevision {
	hash := Hash(data, collisionCount)
	l := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		l[k] = v
	}
	l[HashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(parent.GetName(), hash),
			Namespace:       parent.GetNamespace(),
			Labels:          l,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     runtime.RawExtension{Raw: append([]byte(nil), data...)},
		Revision: number,
	}
}

// adoptLabels adds to existing the labels it lacks: a revision written by an older agent without
// the managed-by label is invisible to the agent's filtered informer, so Create meets it as
// AlreadyExists; labelling it once makes the informer see it and the next sync write nothing.
func (h History) adoptLabels(ctx context.Context, existing *appsv1.ControllerRevision, want map[string]string) (*appsv1.ControllerRevision, error) {
	missing := map[string]string{}
	for k, v := range want {
		if existing.Labels[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return existing, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
	if err != nil {
		return nil, err
	}
	return h.Client.AppsV1().ControllerRevisions(existing.Namespace).Patch(ctx, existing.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// Equal reports whether two revisions hold the same data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// FindEqual returns the revisions holding the same data as needle, in the order given.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var eq []*appsv1.ControllerRevision
	for _, r := range revisions {
		if Equal(r, needle) {
			eq = append(eq, r)
		}
	}
	return eq
}

// Sort orders revisions by revision number, then creation time, then name (oldest first).
func Sort(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Next returns the revision number that follows the highest one in revisions (1 if none).
func Next(revisions []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revisions {
		if r.Revision > highest {
			highest = r.Revision
		}
	}
	return highest + 1
}

// History writes ControllerRevisions through the API.
type History struct {
	Client kubeclient.Interface
}

// Create creates rev. When its name is taken by a revision with other data (a hash collision),
// it increments *collisionCount, renames rev and tries again; when the name is taken by a
// revision with the same data, that revision is returned. The caller must persist
// *collisionCount (in the parent's status) whenever it changed, so the next attempt starts past
// the collision.
func (h History) Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, fmt.Errorf("collisionCount must not be nil")
	}
	for {
		clone := rev.DeepCopy()
		hash := Hash(clone.Data.Raw, collisionCount)
		clone.Name = Name(parent.GetName(), hash)
		if clone.Labels == nil {
			clone.Labels = map[string]string{}
		}
		clone.Labels[HashLabel] = hash
		created, err := h.Client.AppsV1().ControllerRevisions(parent.GetNamespace()).Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		existing, getErr := h.Client.AppsV1().ControllerRevisions(parent.GetNamespace()).Get(ctx, clone.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if metav1.IsControlledBy(existing, parent) && Equal(existing, clone) {
			return h.adoptLabels(ctx, existing, clone.Labels)
		}
		*collisionCount++
	}
}

// Renumber gives an existing revision a new revision number (reusing an equal older revision
// for a template that came back). It does nothing when the number is already right.
func (h History) Renumber(ctx context.Context, rev *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	if rev.Revision == number {
		return rev, nil
	}
	clone := rev.DeepCopy()
	clone.Revision = number
	return h.Client.AppsV1().ControllerRevisions(clone.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
}

// Delete deletes a revision, guarded by its UID; a revision already gone is not an error.
func (h History) Delete(ctx context.Context, rev *appsv1.ControllerRevision) error {
	uid := rev.UID
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := h.Client.AppsV1().ControllerRevisions(rev.Namespace).Delete(ctx, rev.Name, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Excess returns the revisions to delete so that at most limit revisions not named in live
// remain, oldest first. Revisions named in live are never returned.
func Excess(revisions []*appsv1.ControllerRevision, live sets.Set[string], limit int) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live.Has(r.Name) {
			old = append(old, r)
		}
	}
	if limit < 0 {
		limit = 0
	}
	if len(old) <= limit {
		return nil
	}
	Sort(old)
	return old[:len(old)-limit]
}

// Step is what recording a template in the history takes: Existing, when set, is an equal
// revision that becomes the updated revision under Number (no write when it already has that
// number); else Candidate is created.
type Step struct {
	Candidate *appsv1.ControllerRevision
	Existing  *appsv1.ControllerRevision
	Number    int64
}

// PlanUpdate decides how candidate (built by New with Next(revisions)) becomes the updated
// revision, from revisions sorted by Sort: the newest revision equal to it is kept as it is when
// it is the newest of all, renumbered as the newest when the template came back to it, and
// candidate is created when no revision holds its data.
func PlanUpdate(revisions []*appsv1.ControllerRevision, candidate *appsv1.ControllerRevision) Step {
	equal := FindEqual(revisions, candidate)
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revisions[len(revisions)-1]:
		return Step{Candidate: candidate, Existing: equal[len(equal)-1], Number: equal[len(equal)-1].Revision}
	case len(equal) > 0:
		return Step{Candidate: candidate, Existing: equal[len(equal)-1], Number: candidate.Revision}
	}
	return Step{Candidate: candidate, Number: candidate.Revision}
}

// Apply carries out a Step and returns the updated revision. *collisionCount may have grown
// (see Create) and must be persisted even when an error is returned.
func (h History) Apply(ctx context.Context, parent metav1.Object, s Step, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if s.Existing != nil {
		return h.Renumber(ctx, s.Existing, s.Number)
	}
	return h.Create(ctx, parent, s.Candidate, collisionCount)
}

// Find returns the revision named name, or nil.
func Find(revisions []*appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for _, r := range revisions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// ListOwned returns the ControllerRevisions of the lister (a cache) that selector selects in
// owner's namespace and owner controls: a revision of an owner deleted and re-created under the
// same name is another UID's, and is left out.
func ListOwned(lister appslisters.ControllerRevisionLister, owner metav1.Object, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := lister.ControllerRevisions(owner.GetNamespace()).List(selector)
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, owner) {
			out = append(out, r)
		}
	}
	return out, nil
}
