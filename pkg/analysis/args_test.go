package analysis

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func str(s string) *string { return &s }

func TestBindArgs(t *testing.T) {
	declared := []appsv1alpha1.AnalysisArg{{Name: "service"}, {Name: "threshold", Value: str("0.05")}}
	got, err := BindArgs(declared, map[string]string{"service": "web"})
	if err != nil || got["service"] != "web" || got["threshold"] != "0.05" || len(got) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	got, err = BindArgs(declared, map[string]string{"service": "web", "threshold": "0.1"})
	if err != nil || got["threshold"] != "0.1" {
		t.Fatalf("a given value must win over the default: %v, %v", got, err)
	}
	_, err = BindArgs(declared, nil)
	var unset *UnsetArgsError
	if !errors.As(err, &unset) || strings.Join(unset.Names, ",") != "service" {
		t.Fatalf("unset service: got %v", err)
	}
	if !strings.Contains(err.Error(), "argument service has no value") {
		t.Errorf("message %q", err)
	}
	_, err = BindArgs(declared, map[string]string{"service": "web", "colour": "red"})
	if err == nil || err.Error() != "the template declares no argument colour" {
		t.Fatalf("unknown argument: got %v", err)
	}
}

func promCheck(query, success string) *appsv1alpha1.AnalysisCheck {
	return &appsv1alpha1.AnalysisCheck{
		Name:             "errors",
		SuccessCondition: success,
		Provider: appsv1alpha1.AnalysisProvider{Prometheus: &appsv1alpha1.PrometheusProvider{
			Address: "http://prometheus:9090", Query: query}},
	}
}

func TestSubstituteQueryAndCondition(t *testing.T) {
	cases := []struct {
		name, query, success string
		args                 Args
		wantQuery, wantCond  string
	}{
		{"plain", `rate(x{service="{{args.service}}"}[{{args.window}}])`, "result[0] < {{args.max}}",
			Args{"service": "web", "window": "5m", "max": "0.05"},
			`rate(x{service="web"}[5m])`, "result[0] < 0.05"},
		{"spaces inside the braces", `x{a="{{ args.service }}"}`, "result[0] < {{  args.max}}",
			Args{"service": "web", "max": "1"}, `x{a="web"}`, "result[0] < 1"},
		{"double quote and backslash escaped", `x{a="{{args.v}}"}`, `result.size() == 0 || "{{args.v}}" != ""`,
			Args{"v": `we"b\`}, `x{a="we\"b\\"}`, `result.size() == 0 || "we\"b\\" != ""`},
		{"single quotes", `x{a='{{args.v}}'}`, `'{{args.v}}' != ''`,
			Args{"v": `it's`}, `x{a='it\'s'}`, `'it\'s' != ''`},
		{"spaces and braces inside a string", `x{a="{{args.v}}"}`, "true",
			Args{"v": `a b} or vector(1) {`}, `x{a="a b} or vector(1) {"}`, "true"},
		{"a value that looks like a placeholder is not expanded again", `x{a="{{args.v}}",b="{{args.w}}"}`, "true",
			Args{"v": "{{args.w}}", "w": "z"}, `x{a="{{args.w}}",b="z"}`, "true"},
		{"an escaped quote does not close the string", `x{a="\"{{args.v}}"}`, "true",
			Args{"v": `"`}, `x{a="\"\""}`, "true"},
		{"raw string", "x{a=`{{args.v}}`}", "true", Args{"v": `a"b\`}, "x{a=`a\"b\\`}", "true"},
		{"newline escaped", `x{a="{{args.v}}"}`, "true", Args{"v": "a\nb"}, `x{a="a\nb"}`, "true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := promCheck(c.query, c.success)
			got, err := Substitute(in, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if q := got.Provider.Prometheus.Query; q != c.wantQuery {
				t.Errorf("query %s, want %s", q, c.wantQuery)
			}
			if got.SuccessCondition != c.wantCond {
				t.Errorf("condition %s, want %s", got.SuccessCondition, c.wantCond)
			}
			if in.Provider.Prometheus.Query != c.query {
				t.Errorf("the check given was changed: %s", in.Provider.Prometheus.Query)
			}
		})
	}
}

// The substituted condition still compiles and judges the value the argument gave.
func TestSubstitutedConditionCompiles(t *testing.T) {
	got, err := Substitute(promCheck("up", `result < {{args.max}} && "{{args.name}}" == 'we"b'`), Args{"max": "0.5", "name": `we"b`})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	conds, err := r.compiler.compileCheck(got)
	if err != nil {
		t.Fatal(err)
	}
	phase, err := conds.judge(0.2)
	if err != nil || phase != appsv1alpha1.AnalysisSuccessful {
		t.Fatalf("%s: %v, %v", got.SuccessCondition, phase, err)
	}
}

func TestSubstituteRefusals(t *testing.T) {
	cases := []struct {
		name  string
		check *appsv1alpha1.AnalysisCheck
		args  Args
		want  string
	}{
		{"undeclared argument", promCheck(`x{a="{{args.nope}}"}`, "true"), Args{},
			"check errors: provider.prometheus.query uses {{args.nope}}, which the template does not declare"},
		{"query: a value outside quotes that would change the query", promCheck(`x > {{args.v}}`, "true"), Args{"v": "0) or vector(1"},
			`provider.prometheus.query: argument v: "0) or vector(1" stands outside quotes and is not a number, a duration or a name`},
		{"query: spaces outside quotes", promCheck(`x > {{args.v}}`, "true"), Args{"v": "1 or y"},
			"stands outside quotes"},
		{"query: a backquote in a raw string", promCheck("x{a=`{{args.v}}`}", "true"), Args{"v": "a`b"},
			"holds a backquote"},
		{"condition: a string outside quotes", promCheck("up", "result < {{args.v}}"), Args{"v": "result"},
			`successCondition: argument v: "result" stands outside quotes and is not a number, true or false`},
		{"address: host that is not a host", &appsv1alpha1.AnalysisCheck{Name: "c", SuccessCondition: "true", Provider: appsv1alpha1.AnalysisProvider{
			Prometheus: &appsv1alpha1.PrometheusProvider{Address: "http://{{args.h}}:9090", Query: "up"}}}, Args{"h": "evil.com/x?"},
			"stands in the URL's host"},
		{"address: the scheme from an argument", &appsv1alpha1.AnalysisCheck{Name: "c", SuccessCondition: "true", Provider: appsv1alpha1.AnalysisProvider{
			Prometheus: &appsv1alpha1.PrometheusProvider{Address: "{{args.h}}://p:9090", Query: "up"}}}, Args{"h": "file"},
			"the scheme cannot come from an argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Substitute(c.check, c.args)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestSubstituteURLAndHeaders(t *testing.T) {
	cases := []struct{ before, value, want string }{
		{"http://", "prometheus.monitoring:9090", "prometheus.monitoring:9090"},
		{"http://api/v1/", "a b/c{d}", "a%20b%2Fc%7Bd%7D"},
		{"http://api/v1?q=", "a b&c=\"d\"", "a+b%26c%3D%22d%22"},
	}
	for _, c := range cases {
		got, err := urlArg(c.before, c.value)
		if err != nil || got != c.want {
			t.Errorf("after %q, %q: got %q, %v; want %q", c.before, c.value, got, err, c.want)
		}
	}
	if got, err := headerArg("", `Bearer "x" {y}`); err != nil || got != `Bearer "x" {y}` {
		t.Errorf("header value changed: %q, %v", got, err)
	}
	if _, err := headerArg("", "x\r\nX-Admin: 1"); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("a header value with a line break must be refused: %v", err)
	}
}

func TestSubstituteJobTemplate(t *testing.T) {
	check := &appsv1alpha1.AnalysisCheck{Name: "smoke", Provider: appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "t", Args: []string{"--target={{args.url}}"},
				Env: []corev1.EnvVar{{Name: "SERVICE", Value: "{{args.service}}"}}}}}}}}}}}
	got, err := Substitute(check, Args{"url": "http://web/a b", "service": `we"b`})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Provider.Job.Template.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "--target=http://web/a b" || c.Env[0].Value != `we"b` {
		t.Errorf("job container: args %q env %q", c.Args, c.Env[0].Value)
	}
}
