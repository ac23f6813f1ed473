// Package analyze implements `kubectl workload analyze`: run a Canary's or a template's checks
// once, now, against the live system, and print what they measure and the verdict.
package analyze

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	uexec "k8s.io/utils/exec"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var text = verb.Text{
	Use:   "analyze (canary/NAME | atpl/NAME | catpl/NAME | -f TEMPLATE.yaml) [--arg NAME=VALUE]...",
	Short: "Run a Canary's or a template's checks once, now, and print the verdict",
	Long: templates.LongDesc(`
		Run checks once against the live system, from where kubectl runs, and print each
		measured value and verdict. With canary/NAME: every check of the Canary's
		spec.analysis, templates expanded with the Canary's arguments. With atpl/NAME or
		catpl/NAME (an AnalysisTemplate or ClusterAnalysisTemplate of the cluster) or with -f (one
		in a manifest): the template's checks, its arguments given with --arg.

		Nothing is changed: job checks (they would create a Job) and podHealth checks (they
		judge the pods of a release under way) are not run and count as inconclusive. Secrets
		that headers and auth name are read from the namespace with your credentials.

		Exit code: 0 when every check passed, 1 when one failed, 2 when none failed but one
		was inconclusive (or could not measure).`),
	Example: templates.Examples(`
		# Would the checks of canary/checkout pass now?
		kubectl workload analyze canary/checkout

		# Try a template before any Canary uses it
		kubectl workload analyze -f error-rate.yaml --arg service=checkout --arg threshold=0.01

		# Would the cluster's error-rate template pass for the payments service now?
		kubectl workload analyze catpl/error-rate --arg service=payments`),
}

// Options are the analyze command's options.
type Options struct {
	Files []string
	File  string
	Args  []string

	resolve.Object
	kube   kubernetes.Interface
	checks []row
	now    func() time.Time

	genericiooptions.IOStreams
}

// row is one check to run, or the reason it cannot run.
type row struct {
	check    *v1alpha1.AnalysisCheck
	name     string
	template string
	skip     string
}

// NewCmdAnalyze returns the `analyze` command.
func NewCmdAnalyze(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, now: time.Now}
	cmd := verb.NewCommand(text, nil, func(cmd *cobra.Command, args []string) error {
		return o.Complete(f, cmd, args)
	}, o.Run)
	// A string slice, as kubectl's -f is everywhere (the object resolver reads it so).
	cmd.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "An AnalysisTemplate or ClusterAnalysisTemplate manifest whose checks to run")
	cmd.Flags().StringArrayVar(&o.Args, "arg", nil, "A template argument, NAME=VALUE (with a template, not a Canary)")
	return cmd
}

// Complete resolves what to run: the Canary's checks or the template's.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	kube, err := workload.KubeClient(f)
	if err != nil {
		return err
	}
	o.kube = kube
	if len(o.Files) > 1 {
		return fmt.Errorf("-f takes one template manifest, not %d", len(o.Files))
	}
	if len(o.Files) == 1 {
		o.File = o.Files[0]
		if len(args) > 0 {
			return fmt.Errorf("give TYPE/NAME or -f, not both")
		}
		if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
			return err
		}
		return o.fromFile()
	}
	if err := o.Object.Complete(f, cmd, args, nil, o.checkArgs, workload.Canary, workload.AnalysisTemplate, workload.ClusterAnalysisTemplate); err != nil {
		return err
	}
	if o.Ref.Kind.Name != workload.Canary.Name {
		return o.fromTemplate(cmd.Context())
	}
	return o.fromCanary(cmd.Context())
}

// checkArgs refuses --arg for a Canary: it gives its templates their arguments itself.
func (o *Options) checkArgs(ref workload.Ref) error {
	if len(o.Args) > 0 && ref.Kind.Name == workload.Canary.Name {
		return fmt.Errorf("--arg needs a template (atpl/NAME, catpl/NAME or -f): a Canary gives its templates their arguments itself")
	}
	return nil
}

// fromTemplate reads the template the command names from the cluster and expands it with --arg.
func (o *Options) fromTemplate(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	u, err := o.Get(ctx)
	if err != nil {
		return err
	}
	spec, err := specOf(u)
	if err != nil {
		return err
	}
	return o.addTemplate(spec, o.Ref.Kind.Name+"/"+o.Ref.Name)
}

// specOf is the spec of a template read from the cluster.
func specOf(u *unstructured.Unstructured) (*v1alpha1.AnalysisTemplateSpec, error) {
	spec := &v1alpha1.AnalysisTemplateSpec{}
	if s, ok := u.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s, spec); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// addTemplate expands spec with the --arg values and adds its checks.
func (o *Options) addTemplate(spec *v1alpha1.AnalysisTemplateSpec, ref string) error {
	given, err := o.givenArgs(spec, ref)
	if err != nil {
		return err
	}
	checks, err := analysis.ExpandTemplate("", spec, given)
	var unset *analysis.UnsetArgsError
	if errors.As(err, &unset) {
		// The template's own wording speaks of a Canary's args; here the value comes from a flag.
		return fmt.Errorf("argument %s has no value: give it with --arg %s=VALUE (the template has no default)",
			strings.Join(unset.Names, ", "), unset.Names[0])
	}
	if err != nil {
		return err
	}
	for i := range checks {
		o.add(&checks[i], ref)
	}
	return nil
}

// givenArgs parses the --arg values for the template spec (named ref): each NAME=VALUE once, and
// each NAME an argument spec declares; a refusal names the template and its arguments, since
// the person typing them has the template's name, not its text, in front of them.
func (o *Options) givenArgs(spec *v1alpha1.AnalysisTemplateSpec, ref string) (map[string]string, error) {
	declared := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		declared[i] = a.Name
	}
	given := map[string]string{}
	var unknown []string
	for _, a := range o.Args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %q: want NAME=VALUE", a)
		}
		if old, twice := given[k]; twice {
			return nil, fmt.Errorf("--arg %s is given twice (%s, %s): give each argument once", k, old, v)
		}
		given[k] = v
		if !slices.Contains(declared, k) {
			unknown = append(unknown, k)
		}
	}
	switch {
	case len(unknown) > 0 && len(declared) == 0:
		return nil, fmt.Errorf("%s declares no arguments: drop --arg %s", ref, strings.Join(unknown, ", "))
	case len(unknown) > 0:
		return nil, fmt.Errorf("%s declares no argument %s: its arguments are %s", ref, strings.Join(unknown, ", "), strings.Join(declared, ", "))
	}
	return given, nil
}

func (o *Options) fromFile() error {
	data, err := os.ReadFile(o.File)
	if err != nil {
		return err
	}
	doc, err := templateDocument(filepath.Base(o.File), data)
	if err != nil {
		return err
	}
	var t struct {
		APIVersion string                        `json:"apiVersion"`
		Kind       string                        `json:"kind"`
		Meta       metav1.ObjectMeta             `json:"metadata"`
		Spec       v1alpha1.AnalysisTemplateSpec `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(doc, &t); err != nil {
		return fmt.Errorf("%s: %v", filepath.Base(o.File), err)
	}
	return o.addTemplate(&t.Spec, t.Kind+"/"+t.Meta.Name)
}

// templateDocument is the one AnalysisTemplate or ClusterAnalysisTemplate document of a
// manifest (named name), which may hold other objects beside it, as kubectl's -f files do. A
// manifest of no template, or of several, is refused naming what it holds: decoding another
// kind as a template would fail on the first field templates lack, which says nothing useful.
func templateDocument(name string, data []byte) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found, others []string
	var doc []byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		var head struct {
			Kind string            `json:"kind"`
			Meta metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(d, &head); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		switch head.Kind {
		case "":
			continue // an empty document, or one of comments only
		case v1alpha1.KindAnalysisTemplate, v1alpha1.KindClusterAnalysisTemplate:
			found, doc = append(found, head.Kind+"/"+head.Meta.Name), d
		default:
			others = append(others, head.Kind+"/"+head.Meta.Name)
		}
	}
	switch {
	case len(found) > 1:
		return nil, fmt.Errorf("%s holds %d templates (%s): give -f a manifest of one", name, len(found), strings.Join(found, ", "))
	case len(found) == 0 && len(others) == 0:
		return nil, fmt.Errorf("%s holds no AnalysisTemplate or ClusterAnalysisTemplate: give -f a template manifest", name)
	case len(found) == 0:
		return nil, fmt.Errorf("%s holds no AnalysisTemplate or ClusterAnalysisTemplate (it holds %s): give -f a template manifest", name, strings.Join(others, ", "))
	}
	return doc, nil
}

func (o *Options) fromCanary(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	u, err := o.Get(ctx)
	if err != nil {
		return err
	}
	cn := &v1alpha1.Canary{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cn); err != nil {
		return err
	}
	for i := range cn.Spec.Analysis {
		e := &cn.Spec.Analysis[i]
		if e.TemplateRef == nil {
			o.add(e, "")
			continue
		}
		ref := e.TemplateRef.Kind + "/" + e.TemplateRef.Name
		checks, err := o.expand(ctx, cn, e)
		if err != nil {
			o.checks = append(o.checks, row{name: e.Name, template: ref, skip: err.Error()})
			continue
		}
		for j := range checks {
			o.add(&checks[j], ref)
		}
	}
	if len(o.checks) == 0 {
		return fmt.Errorf("%s has no checks in spec.analysis", o.Ref)
	}
	return nil
}

// expand reads the template entry e names and expands it with the Canary's arguments.
func (o *Options) expand(ctx context.Context, cn *v1alpha1.Canary, e *v1alpha1.AnalysisCheck) ([]v1alpha1.AnalysisCheck, error) {
	var ri dynamic.ResourceInterface = o.Client.Resource(v1alpha1.SchemeGroupVersion.WithResource("clusteranalysistemplates"))
	if e.TemplateRef.Kind == v1alpha1.KindAnalysisTemplate {
		ri = o.Client.Resource(v1alpha1.SchemeGroupVersion.WithResource("analysistemplates")).Namespace(o.Namespace)
	}
	u, err := ri.Get(ctx, e.TemplateRef.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	spec, err := specOf(u)
	if err != nil {
		return nil, err
	}
	given, err := analysis.CanaryArgs(cn, e.Args)
	if err != nil {
		return nil, err
	}
	return analysis.ExpandTemplate(e.Name, spec, given)
}

func (o *Options) add(check *v1alpha1.AnalysisCheck, template string) {
	r := row{check: check, name: check.Name, template: template}
	switch {
	case check.Provider.Job != nil:
		r.skip = "a job check would create a Job: not run by analyze"
	case check.Provider.PodHealth != nil:
		r.skip = "a podHealth check judges the pods of a release under way: not run by analyze"
	}
	o.checks = append(o.checks, r)
}

// Run measures each check once and prints the table and the verdict; the exit code is the
// verdict's.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	runner, err := analysis.NewRunner()
	if err != nil {
		return err
	}
	env := analysis.Env{Client: o.kube}
	w := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "CHECK\tTEMPLATE\tVALUE\tVERDICT\tMESSAGE")
	var failed, inconclusive int
	for _, r := range o.checks {
		phase, value, msg := o.measure(ctx, runner, env, r)
		switch phase {
		case v1alpha1.AnalysisSuccessful:
		case v1alpha1.AnalysisFailed:
			failed++
		default:
			inconclusive++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.name, dash(r.template), dash(value), phase, msg)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	switch {
	case failed > 0:
		return uexec.CodeExitError{Err: fmt.Errorf("%d of %d checks failed", failed, len(o.checks)), Code: 1}
	case inconclusive > 0:
		return uexec.CodeExitError{Err: fmt.Errorf("%d of %d checks inconclusive", inconclusive, len(o.checks)), Code: 2}
	}
	_, err = fmt.Fprintf(o.Out, "all %d checks passed\n", len(o.checks))
	return err
}

// measure takes one measurement of r and judges it with the check's conditions.
func (o *Options) measure(ctx context.Context, runner *analysis.Runner, env analysis.Env, r row) (v1alpha1.AnalysisPhase, string, string) {
	if r.skip != "" {
		return v1alpha1.AnalysisInconclusive, "", r.skip
	}
	p, err := env.Provider(r.check, analysis.Target{Namespace: o.Namespace})
	if err != nil {
		return v1alpha1.AnalysisError, "", err.Error()
	}
	once := *r.check // one measurement decides here, whatever the check's count
	once.Interval, once.Count, once.FailureLimit, once.InconclusiveLimit = nil, nil, 0, 0
	zero := int32(0)
	once.ConsecutiveErrorLimit = &zero
	st, _ := runner.Step(ctx, &once, &v1alpha1.AnalysisCheckStatus{}, p, o.now())
	if len(st.Measurements) == 0 {
		return v1alpha1.AnalysisInconclusive, "", "no measurement"
	}
	m := st.Measurements[len(st.Measurements)-1]
	return m.Phase, m.Value, m.Message
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
