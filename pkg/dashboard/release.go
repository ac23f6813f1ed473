package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// ReleasePage is what the page of one workload shows.
type ReleasePage struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Phase     string   `json:"phase"`
	Summary   string   `json:"summary"`
	Progress  []string `json:"progress"`
	ReadOnly  bool     `json:"readOnly"`
	Steps     []Step   `json:"steps"`
	Traffic   *Traffic `json:"traffic"`
	Groups    []Group  `json:"groups"`
	Checks    []Check  `json:"checks"`
	Events    []Event  `json:"events"`
	Actions   []Button `json:"actions"`
	Errors    []string `json:"errors"`
}

// Step is one step of a Canary's release on its timeline.
type Step struct {
	Index    int32    `json:"index"`
	Replicas int32    `json:"replicas"`
	Weight   *int32   `json:"weight,omitempty"`
	Pause    string   `json:"pause"`
	Analysis []string `json:"analysis"`
	// State is the batch's state (Pending, Upgrading, Baking, Paused, Completed), "Pending"
	// when the agent has not planned it yet.
	State string `json:"state"`
	// Where is "done", "current" or "next".
	Where        string     `json:"where"`
	PauseEndTime *time.Time `json:"pauseEndTime,omitempty"`
}

// Traffic is a Canary's traffic split.
type Traffic struct {
	Desired     int32  `json:"desired"`
	Actual      int32  `json:"actual"`
	HeaderRoute string `json:"headerRoute,omitempty"`
}

// Group is the pods of one revision (or subset, or instance group) as the tree draws them.
type Group struct {
	Title  string `json:"title"`
	Info   string `json:"info"`
	Status string `json:"status"`
	Pods   []Pod  `json:"pods"`
}

// Pod is one box of the picture.
type Pod struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Ready  bool   `json:"ready"`
}

// Check is one analysis check with its measurements over time and its bounds.
type Check struct {
	Name       string      `json:"name"`
	Phase      string      `json:"phase"`
	Message    string      `json:"message"`
	Success    string      `json:"success"`
	Failure    string      `json:"failure"`
	Thresholds []Threshold `json:"thresholds"`
	Points     []Point     `json:"points"`
}

// Event is one Event about the workload or its objects.
type Event struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Object  string    `json:"object"`
	Message string    `json:"message"`
	Count   int64     `json:"count"`
	Last    time.Time `json:"last"`
}

// maxEvents bounds the Events shown, newest first.
const maxEvents = 30

// Reader is what the release page reads beyond the hub's caches: the workload's tree
// (workload.Tree, the code of `kubectl workload get`) and its revisions.
type Reader struct {
	Dyn  dynamic.Interface
	Kube kubernetes.Interface
}

// BuildRelease reads one workload's page.
func BuildRelease(ctx context.Context, h *Hub, r Reader, k workload.Kind, namespace, name string, readOnly bool) ReleasePage {
	page := ReleasePage{Kind: k.Short, Namespace: namespace, Name: name, ReadOnly: readOnly,
		Steps: []Step{}, Groups: []Group{}, Checks: []Check{}, Events: []Event{}, Errors: h.Errors()}
	obj := h.Get(k.Resource, namespace, name)
	if obj == nil {
		page.Phase = "NotFound"
		page.Summary = fmt.Sprintf("%s/%s not found in namespace %q (or not visible to you)", k.Short, name, namespace)
		return page
	}
	if st, err := workload.RolloutStatusOf(k, obj); err != nil {
		page.Errors = append(page.Errors, err.Error())
	} else {
		page.Phase, page.Summary, page.Progress = st.Phase, st.Summary, st.Progress
	}
	ref := workload.Ref{Kind: k, Name: name}
	names := map[string]bool{name: true}
	tree, err := workload.Tree(ctx, r.Dyn, r.Kube, namespace, ref, obj)
	if err != nil {
		page.Errors = append(page.Errors, err.Error())
	} else {
		page.Groups = groups(tree, nil, page.Groups)
		for _, o := range tree.Objects() {
			if m, ok := o.(interface{ GetName() string }); ok {
				names[m.GetName()] = true
			}
		}
	}
	var c *v1alpha1.Canary
	if k.Name == workload.Canary.Name {
		if c, err = workload.AsCanary(obj); err != nil {
			page.Errors = append(page.Errors, err.Error())
		} else {
			page.Steps, page.Traffic = steps(c), traffic(c)
			page.Checks = checks(c, h.history)
		}
	}
	page.Events = events(h, namespace, names)
	page.Actions = buttons(k, name, c, readOnly)
	return page
}

// groups collects the pods of the tree under the line that holds them, titled by the path of
// lines above it.
func groups(n *workload.Node, path []string, out []Group) []Group {
	var pods []Pod
	for _, child := range n.Children {
		if p, ok := child.Object.(*corev1.Pod); ok {
			pods = append(pods, Pod{Name: p.Name, Status: child.Status, Ready: podutils.IsPodReady(p)})
			continue
		}
		out = groups(child, append(append([]string(nil), path...), child.Name), out)
	}
	if len(pods) > 0 {
		title := strings.Join(path, " › ")
		if title == "" {
			title = n.Name
		}
		out = append(out, Group{Title: title, Info: n.Info, Status: n.Status, Pods: pods})
	}
	return out
}

// steps is a Canary's release as a timeline: the steps the agent plans (v1alpha1.CanarySteps)
// with the state of each batch in its status.
func steps(c *v1alpha1.Canary) []Step {
	planned, err := v1alpha1.CanarySteps(&c.Spec)
	if err != nil {
		return []Step{}
	}
	out := make([]Step, 0, len(planned))
	for i, s := range planned {
		st := Step{Index: int32(i + 1), Replicas: s.Replicas, Analysis: append([]string{}, s.Analysis...), State: string(v1alpha1.BatchPending), Where: "next"}
		if i < len(c.Spec.Steps) {
			st.Weight = c.Spec.Steps[i].Weight
		}
		switch {
		case s.Pause == nil:
		case s.Pause.Duration == nil:
			st.Pause = "until promoted"
		default:
			st.Pause = s.Pause.Duration.Duration.String()
		}
		for _, b := range c.Status.Batches {
			if b.Index != st.Index {
				continue
			}
			st.State = string(b.State)
			if b.PauseEndTime != nil {
				t := b.PauseEndTime.UTC()
				st.PauseEndTime = &t
			}
		}
		switch {
		case st.Index == c.Status.CurrentBatch && st.State != string(v1alpha1.BatchCompleted):
			st.Where = "current"
		case st.State == string(v1alpha1.BatchCompleted):
			st.Where = "done"
		}
		out = append(out, st)
	}
	return out
}

func traffic(c *v1alpha1.Canary) *Traffic {
	t := c.Status.TrafficRouting
	if t == nil {
		return nil
	}
	out := &Traffic{Desired: t.DesiredWeight, Actual: t.ActualWeight}
	if t.HeaderRoute {
		var ms []string
		for _, m := range t.HeaderMatches {
			ms = append(ms, m.Name+"="+m.Value)
		}
		out.HeaderRoute = strings.Join(ms, ", ")
	}
	return out
}

// checks are a Canary's analysis checks with their history and bounds.
func checks(c *v1alpha1.Canary, hist *History) []Check {
	status := map[string]v1alpha1.AnalysisCheckStatus{}
	for _, a := range c.Status.Analysis {
		status[a.Name] = a
	}
	out := []Check{}
	for _, a := range c.Spec.Analysis {
		ch := Check{Name: a.Name, Success: a.SuccessCondition, Failure: a.FailureCondition,
			Thresholds: Thresholds(a.SuccessCondition, a.FailureCondition)}
		if p := a.Provider.PodHealth; p != nil {
			ch.Success = fmt.Sprintf("notReady <= %d (and restarts <= %d)", p.MaxNotReady, p.MaxRestarts)
			ch.Thresholds = append(ch.Thresholds, Threshold{Kind: "success", Op: "<=", Value: float64(p.MaxNotReady)})
		}
		if s, ok := status[a.Name]; ok {
			ch.Phase, ch.Message = string(s.Phase), s.Message
		}
		ch.Points = hist.Points(c.Namespace, c.Name, a.Name)
		if ch.Points == nil {
			ch.Points = []Point{}
		}
		out = append(out, ch)
	}
	return out
}

// events are the Events of the namespace about the named objects, newest first.
func events(h *Hub, namespace string, names map[string]bool) []Event {
	out := []Event{}
	for _, e := range h.List(eventsResource) {
		if e.GetNamespace() != namespace {
			continue
		}
		obj, _, _ := unstructured.NestedString(e.Object, "involvedObject", "name")
		if !names[obj] {
			continue
		}
		kind, _, _ := unstructured.NestedString(e.Object, "involvedObject", "kind")
		ev := Event{Object: strings.ToLower(kind) + "/" + obj, Last: eventTime(e)}
		ev.Type, _, _ = unstructured.NestedString(e.Object, "type")
		ev.Reason, _, _ = unstructured.NestedString(e.Object, "reason")
		ev.Message, _, _ = unstructured.NestedString(e.Object, "message")
		ev.Count, _, _ = unstructured.NestedInt64(e.Object, "count")
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}

// eventTime is when an Event last happened: lastTimestamp, eventTime, or its creation.
func eventTime(e *unstructured.Unstructured) time.Time {
	for _, f := range []string{"lastTimestamp", "eventTime"} {
		if s, ok, _ := unstructured.NestedString(e.Object, f); ok && s != "" {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return t
			}
		}
	}
	return e.GetCreationTimestamp().Time
}
