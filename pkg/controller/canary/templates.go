package canary

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	informers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// templateIndex indexes Canaries by the templates their spec.analysis entries name
// ("Kind/namespace/name", namespace empty for a ClusterAnalysisTemplate), so that a template's
// event finds the Canaries that use it.
const templateIndex = "canary.apps.workload.dev/analysistemplates"

// templateSource reads templates from the agent's informers; a nil lister means that kind is
// not watched, and an entry naming it waits, as for a template that does not exist.
type templateSource struct {
	namespaced listers.AnalysisTemplateLister
	cluster    listers.ClusterAnalysisTemplateLister
}

// analysisView is spec.analysis as steps run it: inline checks as they are and each entry with
// templateRef replaced by its template's checks (named "<entry>.<check>"), arguments
// substituted. An entry that cannot be resolved stays as it is, with its reason in unresolved:
// its step waits, never passes.
type analysisView struct {
	checks []v1alpha1.AnalysisCheck
	// entries are the names of the checks each entry of spec.analysis runs.
	entries map[string][]string
	// template says, for a check from a template, which: "ClusterAnalysisTemplate/error-rate".
	template map[string]string
	// unresolved says, by entry name, why an entry with templateRef runs no check.
	unresolved map[string]unresolvedEntry
}

type unresolvedEntry struct{ reason, message string }

// expand is the names of the checks a step naming entries runs.
func (v *analysisView) expand(entries []string) []string {
	if v == nil {
		return entries
	}
	var out []string
	for _, e := range entries {
		if names, ok := v.entries[e]; ok {
			out = append(out, names...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// templateOf is the template check name came from, "" for an inline check.
func (v *analysisView) templateOf(name string) string {
	if v == nil {
		return ""
	}
	return v.template[name]
}

// why says why the entry name runs no check; ok is false when it is resolved.
func (v *analysisView) why(name string) (u unresolvedEntry, ok bool) {
	if v == nil {
		return u, false
	}
	u, ok = v.unresolved[name]
	return u, ok
}

func (v *analysisView) check(name string) *v1alpha1.AnalysisCheck {
	if v == nil {
		return nil
	}
	return findCheck(v.checks, name)
}

// resolveAnalysis builds the analysis view of cn from the templates the agent watches.
func (s templateSource) resolveAnalysis(cn *v1alpha1.Canary) *analysisView {
	v := &analysisView{entries: map[string][]string{}, template: map[string]string{}, unresolved: map[string]unresolvedEntry{}}
	for i := range cn.Spec.Analysis {
		e := &cn.Spec.Analysis[i]
		if e.TemplateRef == nil {
			v.checks = append(v.checks, *e)
			v.entries[e.Name] = []string{e.Name}
			continue
		}
		checks, err := s.templateChecks(cn, e)
		if err != nil {
			v.checks = append(v.checks, *e)
			v.entries[e.Name] = []string{e.Name}
			v.unresolved[e.Name] = unresolved(e, err)
			continue
		}
		for _, ch := range checks {
			v.checks = append(v.checks, ch)
			v.entries[e.Name] = append(v.entries[e.Name], ch.Name)
			v.template[ch.Name] = e.TemplateRef.Kind + "/" + e.TemplateRef.Name
		}
	}
	return v
}

// errTemplateNotFound says the template an entry names does not exist (or is not watched).
var errTemplateNotFound = errors.New("not found")

func unresolved(e *v1alpha1.AnalysisCheck, err error) unresolvedEntry {
	ref := e.TemplateRef.Kind + " " + e.TemplateRef.Name
	var unset *analysis.UnsetArgsError
	switch {
	case errors.Is(err, errTemplateNotFound):
		return unresolvedEntry{v1alpha1.ReasonAnalysisTemplateNotFound, fmt.Sprintf("analysis %s: %s not found: the release waits until it exists", e.Name, ref)}
	case errors.As(err, &unset):
		return unresolvedEntry{v1alpha1.ReasonArgumentUnset, fmt.Sprintf("analysis %s (%s): %v: the release waits", e.Name, ref, err)}
	}
	return unresolvedEntry{v1alpha1.ReasonInvalidArgument, fmt.Sprintf("analysis %s (%s): %v: the release waits", e.Name, ref, err)}
}

// templateChecks are the checks of the template entry e names, for cn.
func (s templateSource) templateChecks(cn *v1alpha1.Canary, e *v1alpha1.AnalysisCheck) ([]v1alpha1.AnalysisCheck, error) {
	spec, err := s.template(cn.Namespace, *e.TemplateRef)
	if err != nil {
		return nil, err
	}
	given, err := analysis.CanaryArgs(cn, e.Args)
	if err != nil {
		return nil, err
	}
	return analysis.ExpandTemplate(e.Name, spec, given)
}

func (s templateSource) template(namespace string, ref v1alpha1.AnalysisTemplateRef) (*v1alpha1.AnalysisTemplateSpec, error) {
	var spec *v1alpha1.AnalysisTemplateSpec
	var err error
	switch {
	case ref.Kind == v1alpha1.KindAnalysisTemplate && s.namespaced != nil:
		var t *v1alpha1.AnalysisTemplate
		if t, err = s.namespaced.AnalysisTemplates(namespace).Get(ref.Name); err == nil {
			spec = &t.Spec
		}
	case ref.Kind == v1alpha1.KindClusterAnalysisTemplate && s.cluster != nil:
		var t *v1alpha1.ClusterAnalysisTemplate
		if t, err = s.cluster.Get(ref.Name); err == nil {
			spec = &t.Spec
		}
	default:
		return nil, errTemplateNotFound
	}
	if apierrors.IsNotFound(err) {
		return nil, errTemplateNotFound
	}
	return spec, err
}

// setAnalysisCondition writes the AnalysisResolved condition of a Canary whose spec.analysis
// names templates: False naming every entry that cannot run and why, True once all can. A
// Canary without template entries has no such condition.
func setAnalysisCondition(v *analysisView, st *v1alpha1.CanaryStatus, cn *v1alpha1.Canary, now metav1.Time) {
	uses := false
	for _, e := range cn.Spec.Analysis {
		uses = uses || e.TemplateRef != nil
	}
	if !uses || v == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionAnalysisResolved)
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionAnalysisResolved, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonResolved, Message: "every template of spec.analysis is found and its arguments set",
		ObservedGeneration: cn.Generation, LastTransitionTime: now}
	if len(v.unresolved) > 0 {
		names := make([]string, 0, len(v.unresolved))
		for n := range v.unresolved {
			names = append(names, n)
		}
		sort.Strings(names)
		msgs := make([]string, len(names))
		for i, n := range names {
			msgs[i] = v.unresolved[n].message
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v.unresolved[names[0]].reason, strings.Join(msgs, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// watchTemplates indexes Canaries by the templates they name and enqueues them on the
// templates' events.
func (c *Controller) watchTemplates(canaries informers.CanaryInformer, namespaced informers.AnalysisTemplateInformer, cluster informers.ClusterAnalysisTemplateInformer) error {
	if _, exists := c.canaryIndexer.GetIndexers()[templateIndex]; !exists {
		if err := canaries.Informer().AddIndexers(cache.Indexers{templateIndex: indexByTemplate}); err != nil {
			return fmt.Errorf("indexing Canaries (%s): %w", templateIndex, err)
		}
	}
	if namespaced != nil {
		c.templates.namespaced = namespaced.Lister()
		if err := c.Watch(namespaced.Informer(), c.templateHandler(v1alpha1.KindAnalysisTemplate)); err != nil {
			return err
		}
	}
	if cluster != nil {
		c.templates.cluster = cluster.Lister()
		return c.Watch(cluster.Informer(), c.templateHandler(v1alpha1.KindClusterAnalysisTemplate))
	}
	return nil
}

func indexByTemplate(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, e := range cn.Spec.Analysis {
		if e.TemplateRef != nil {
			keys = append(keys, templateKey(e.TemplateRef.Kind, cn.Namespace, e.TemplateRef.Name))
		}
	}
	return keys, nil
}

func templateKey(kind, namespace, name string) string {
	if kind == v1alpha1.KindClusterAnalysisTemplate {
		namespace = ""
	}
	return kind + "/" + namespace + "/" + name
}

// templateHandler enqueues the Canaries that name a template of kind on its events.
func (c *Controller) templateHandler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		o, err := expectations.ObjectFromDeleteEvent(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		canaries, err := c.canaryIndexer.ByIndex(templateIndex, templateKey(kind, o.GetNamespace(), o.GetName()))
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		for _, cn := range canaries {
			c.Enqueue(cn)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj interface{}) { enqueue(obj) }, DeleteFunc: enqueue}
}
