package workload

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// AnalysisTemplate and ClusterAnalysisTemplate hold named checks with arguments that Canaries
// run by reference (docs/analysis.md). They run no pods and have no rollout: `list` shows them
// in a table of their own (Catalogued) and `get` draws their arguments and checks; the verbs of
// a rollout refuse them.
var (
	AnalysisTemplate = Kind{Name: v1alpha1.KindAnalysisTemplate, Short: "atpl",
		Resource: v1alpha1.SchemeGroupVersion.WithResource("analysistemplates"),
		aliases:  []string{"analysistemplate", "analysistemplates", "analysistemplates.apps.workload.dev"}, helper: templateKind{}}
	ClusterAnalysisTemplate = Kind{Name: v1alpha1.KindClusterAnalysisTemplate, Short: "catpl", ClusterScoped: true,
		Resource: v1alpha1.SchemeGroupVersion.WithResource("clusteranalysistemplates"),
		aliases:  []string{"clusteranalysistemplate", "clusteranalysistemplates", "clusteranalysistemplates.apps.workload.dev"}, helper: templateKind{}}
)

// Catalogued is a kind `list` shows in a table of its own, after the workloads': it has no
// rollout, so no replica counts or status. Kinds whose Columns are the same share one table.
type Catalogued interface {
	// Columns are the table's headings between NAME and AGE; Row is obj's cells under them.
	Columns() []string
	Row(obj *unstructured.Unstructured) ([]string, error)
}

// Catalogue lists the kinds `list` shows after the workloads.
var Catalogue = kindsWith[Catalogued]()

// RowOf is k's cells for obj under its Columns.
func RowOf(k Kind, obj *unstructured.Unstructured) ([]string, error) {
	c, ok := k.helper.(Catalogued)
	if !ok {
		return nil, fmt.Errorf("no table row for a %s", k.Name)
	}
	return c.Row(obj)
}

// ColumnsOf is k's Columns (none for a kind that is not Catalogued).
func ColumnsOf(k Kind) []string {
	if c, ok := k.helper.(Catalogued); ok {
		return c.Columns()
	}
	return nil
}

type templateKind struct{}

func asTemplateSpec(obj *unstructured.Unstructured) (*v1alpha1.AnalysisTemplateSpec, error) {
	t := &v1alpha1.AnalysisTemplate{}
	if err := fromUnstructured(obj, t); err != nil {
		return nil, err
	}
	return &t.Spec, nil
}

func (templateKind) Columns() []string { return []string{"CHECKS", "ARGS"} }

// Row names each check with its provider, and each argument with its default: what a person
// choosing a template for a Canary needs to know.
func (templateKind) Row(obj *unstructured.Unstructured) ([]string, error) {
	spec, err := asTemplateSpec(obj)
	if err != nil {
		return nil, err
	}
	var checks []string
	for _, c := range spec.Checks {
		checks = append(checks, c.Name+" ("+providerName(c.Provider)+")")
	}
	var args []string
	for _, a := range spec.Args {
		args = append(args, argText(a))
	}
	return []string{orNone(strings.Join(checks, ", ")), orNone(strings.Join(args, ", "))}, nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// argText is "service" for an argument every Canary must give, "threshold=0.05" for one with a
// default.
func argText(a v1alpha1.AnalysisArg) string {
	if a.Value == nil {
		return a.Name
	}
	return a.Name + "=" + strconv.Quote(*a.Value)
}

// tree draws the template: its arguments, then its checks with what each measures and judges.
func (templateKind) tree(_ *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	spec, err := asTemplateSpec(obj)
	if err != nil {
		return nil, err
	}
	root := &Node{Object: obj, Created: obj.GetCreationTimestamp().Time,
		Info: plural(int32(len(spec.Checks)), "check", "checks") + ", " + plural(int32(len(spec.Args)), "argument", "arguments")}
	for _, a := range spec.Args {
		info := "required: each Canary gives it"
		if a.Value != nil {
			info = "default " + strconv.Quote(*a.Value)
		}
		root.Children = append(root.Children, &Node{Name: "arg " + a.Name, Info: info})
	}
	for i := range spec.Checks {
		c := &spec.Checks[i]
		root.Children = append(root.Children, &Node{Name: "check " + c.Name, Info: checkText(c)})
	}
	return root, nil
}

func providerName(p v1alpha1.AnalysisProvider) string {
	switch {
	case p.Prometheus != nil:
		return "prometheus"
	case p.Web != nil:
		return "web"
	case p.Job != nil:
		return "job"
	case p.PodHealth != nil:
		return "podHealth"
	}
	return "no provider"
}

// checkText says in one line what a check measures, how often, and what passes it.
func checkText(c *v1alpha1.AnalysisCheck) string {
	parts := []string{providerText(c.Provider)}
	switch {
	case c.Interval != nil && c.Count != nil:
		parts = append(parts, fmt.Sprintf("every %s, %d measurements", c.Interval.Duration, *c.Count))
	case c.Interval != nil:
		parts = append(parts, fmt.Sprintf("every %s while the step bakes", c.Interval.Duration))
	default:
		parts = append(parts, "once")
	}
	if c.FailureLimit > 0 || c.InconclusiveLimit > 0 {
		parts = append(parts, fmt.Sprintf("failureLimit %d, inconclusiveLimit %d", c.FailureLimit, c.InconclusiveLimit))
	}
	if c.SuccessCondition != "" {
		parts = append(parts, "success: "+strings.TrimSpace(c.SuccessCondition))
	}
	if c.FailureCondition != "" {
		parts = append(parts, "failure: "+strings.TrimSpace(c.FailureCondition))
	}
	return strings.Join(parts, "; ")
}

func providerText(p v1alpha1.AnalysisProvider) string {
	switch {
	case p.Prometheus != nil:
		return fmt.Sprintf("prometheus %s: %s", p.Prometheus.Address, strings.TrimSpace(p.Prometheus.Query))
	case p.Web != nil:
		method := p.Web.Method
		if method == "" {
			method = "GET"
		}
		return fmt.Sprintf("web %s %s", method, p.Web.URL)
	case p.Job != nil:
		var images []string
		for _, c := range p.Job.Template.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		return "job " + strings.Join(images, ", ")
	case p.PodHealth != nil:
		return fmt.Sprintf("podHealth maxRestarts %d, maxNotReady %d", p.PodHealth.MaxRestarts, p.PodHealth.MaxNotReady)
	}
	return "no provider"
}
