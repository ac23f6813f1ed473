package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// contestLimit is how many times in a row one other field manager may change back what the
// agent set on an object before the agent stops writing it (docs/traffic.md, "Another
// controller on the route"). A person's one-off edit is corrected; a controller that puts its
// own value back every time is not fought: the agent corrects its first contestLimit−1 changes
// back, and at the next one stops writing and reports the Canary Degraded, naming the manager.
const contestLimit = 3

// contest is what the agent knows of the fields it owns on one object for one Canary: what it
// last set, and who changed that back how many times in a row.
type contest struct {
	wrote   string // what the agent last set ("" before its first write)
	base    string // the resourceVersion the agent's last write was made on
	written string // the resourceVersion the agent's last write made
	manager string // the field manager of the last change back
	count   int    // changes back by manager in a row
	seen    string // the resourceVersion of the object the last change back was counted (and its manager read) at
}

// contested reports whether the agent stopped writing the object.
func (e *contest) contested() bool { return e.count >= contestLimit }

// contests holds a contest per Canary and object. It lives in memory: an agent that starts
// leading writes at most contestLimit times more (its first write, then the corrections) before
// it stops again.
type contests struct {
	mu sync.Mutex
	m  map[string]map[string]*contest // Canary key → object ("HTTPRoute/web") → contest
}

// get returns a copy of the contest of a Canary over an object (zero when none).
func (cs *contests) get(canary, object string) contest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if e, ok := cs.m[canary][object]; ok {
		return *e
	}
	return contest{}
}

// set records the contest of a Canary over an object.
func (cs *contests) set(canary, object string, e contest) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]map[string]*contest{}
	}
	if cs.m[canary] == nil {
		cs.m[canary] = map[string]*contest{}
	}
	cs.m[canary][object] = &e
}

// forget drops what is known of a Canary (deleted).
func (cs *contests) forget(canary string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.m, canary)
}

// changedBack records that the object, at resourceVersion rv, carries something else than
// what the agent last set, changed by manager; counted once per resourceVersion.
func (e *contest) changedBack(manager, rv string) {
	if e.seen == rv {
		return
	}
	if manager != e.manager {
		e.manager, e.count = manager, 0
	}
	e.count++
	e.seen = rv
}

// changedBackTooOften decides, before the agent sets again what it owns on an object, whether
// another field manager keeps changing it back. The object (at resourceVersion rv, carrying
// current) changed it back when it carries something else than what the agent last set, in a
// version that is neither the one the agent wrote on nor the one its write made (a lagging
// cache shows the former). Only then is the object read from the API server (read), for its
// managedFields, which the informer caches strip: the manager that last wrote the field at path
// is the one that changed it. It reports true once one manager did so contestLimit times in a
// row; a change by another manager starts the count again.
func changedBackTooOften(ctx context.Context, e *contest, rv, current string, read func(context.Context) ([]metav1.ManagedFieldsEntry, error), path ...string) (bool, error) {
	if e.wrote == "" || rv == e.base || rv == e.written || current == e.wrote {
		return false, nil
	}
	if e.seen != rv {
		fields, err := read(ctx)
		if err != nil {
			return false, err
		}
		e.changedBack(lastWriter(fields, path...), rv)
	}
	return e.contested(), nil
}

// who names the manager of the changes back, for a message.
func (e *contest) who() string {
	if e.manager == "" {
		return "a writer that records no field manager"
	}
	return fmt.Sprintf("field manager %q", e.manager)
}

// lastWriter returns the field manager, other than the agent, that last wrote a field under
// path (field names as in managedFields' fieldsV1: "f:spec", "f:rules") of an object, from its
// managedFields. A change that removed the field (spec.paused: false is not serialized) leaves
// no owner of it: then the manager whose entry is the newest is named. "" when there is none.
// Status writes do not count (scale writes, such as the HorizontalPodAutoscaler's, do).
func lastWriter(fields []metav1.ManagedFieldsEntry, path ...string) string {
	var owner, newest string
	var ownerAt, newestAt metav1.Time
	later := func(f metav1.ManagedFieldsEntry, than metav1.Time, found string) bool {
		return found == "" || (f.Time != nil && !f.Time.Before(&than))
	}
	for _, f := range fields {
		if f.Manager == v1alpha1.FieldManagerAgent || f.Subresource == "status" || f.FieldsV1 == nil {
			continue
		}
		at := metav1.Time{}
		if f.Time != nil {
			at = *f.Time
		}
		if later(f, newestAt, newest) {
			newest, newestAt = f.Manager, at
		}
		if owns(f.FieldsV1.Raw, path) && later(f, ownerAt, owner) {
			owner, ownerAt = f.Manager, at
		}
	}
	if owner != "" {
		return owner
	}
	return newest
}

// owns reports whether a fieldsV1 set holds path or a field under it.
func owns(raw []byte, path []string) bool {
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil {
		return false
	}
	if len(path) == 0 {
		return true
	}
	sub, ok := set[path[0]]
	return ok && owns(sub, path[1:])
}

// deploymentField is a field the agent sets on a Deployment it does not own (the stable
// Deployment, or a Deployment target): how to read it, where managedFields record it, and what
// a person must do when another controller keeps changing it back.
type deploymentField struct {
	name  string   // spec.replicas
	path  []string // in managedFields' fieldsV1
	value func(*appsv1.Deployment) string
	what  string // the message's advice: what the other controller must leave alone, and how
	fix   string // the kubectl command, with %s for the Deployment, that sets it once by hand
}

var (
	deploymentReplicas = deploymentField{name: "spec.replicas", path: []string{"f:spec", "f:replicas"},
		value: func(d *appsv1.Deployment) string { return fmt.Sprint(replicasOf(d)) },
		what:  "an Argo Rollout whose workloadRef names it: release it with one of the two, not both; a HorizontalPodAutoscaler: point its scaleTargetRef at the Canary",
		fix:   "kubectl scale deploy/%s"}
	deploymentPaused = deploymentField{name: "spec.paused", path: []string{"f:spec", "f:paused"},
		value: func(d *appsv1.Deployment) string { return fmt.Sprint(d.Spec.Paused) },
		what:  "a GitOps tool applying it without spec.paused: ignore the field",
		fix:   "kubectl rollout pause deploy/%s"}
)

func (f deploymentField) object(d *appsv1.Deployment) string {
	return "Deployment/" + d.Name + "/" + f.name
}

// contestDeployment decides, before the agent sets a field of the stable Deployment (a
// stableRef's, or a Deployment target) to want again, whether another field manager keeps
// changing it back (changedBackTooOften): an Argo Rollout whose workloadRef names the
// Deployment scales it down, an autoscaler scales it, a GitOps tool resumes it. A person's
// one-off kubectl scale or rollout resume is set back, as before; at the contestLimit-th change
// back in a row by one manager the agent stops writing the Deployment and the Canary is
// Degraded, naming the manager.
func (c *Controller) contestDeployment(ctx context.Context, obs *observed, field deploymentField, want string) (*failure, error) {
	d := obs.stable
	canary := obs.canary.Namespace + "/" + obs.canary.Name
	e := c.contests.get(canary, field.object(d))
	wasContested := e.contested()
	stop, err := changedBackTooOften(ctx, &e, d.ResourceVersion, field.value(d), func(ctx context.Context) ([]metav1.ManagedFieldsEntry, error) {
		fresh, err := c.kubeClient.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading Deployment %s/%s for its field managers: %w", d.Namespace, d.Name, err)
		}
		return fresh.ManagedFields, nil
	}, field.path...)
	c.contests.set(canary, field.object(d), e)
	if !stop || err != nil {
		return nil, err
	}
	f := &failure{reason: v1alpha1.ReasonDeploymentContested, message: fmt.Sprintf(
		"Deployment %q: %s set %s back to %s after the agent set it to %s, %d times in a row: "+
			"the agent stopped writing the Deployment so as not to fight another controller, and nothing of the release moves. "+
			"Make that controller leave %s alone (%s), then set it once by hand (%s): the agent resumes at a change by anyone else",
		d.Name, e.who(), field.name, field.value(d), want, contestLimit, field.name, field.what, fmt.Sprintf(field.fix, d.Name))}
	if !wasContested {
		c.Recorder.Eventf(obs.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
	}
	return f, nil
}

// wroteDeployment records the agent's write of a field of the stable Deployment.
func (c *Controller) wroteDeployment(obs *observed, field deploymentField, out *appsv1.Deployment) {
	canary := obs.canary.Namespace + "/" + obs.canary.Name
	e := c.contests.get(canary, field.object(out))
	e.wrote, e.base, e.written = field.value(out), obs.stable.ResourceVersion, out.ResourceVersion
	c.contests.set(canary, field.object(out), e)
}
