package analysis

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/utils/lru"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// costLimit bounds one evaluation of a condition, as the API server bounds one CEL rule
// (apiserver's PerCallLimit): a condition over a long vector cannot stall a controller.
const costLimit = 1_000_000

// conditions are a check's compiled success and failure conditions; nil when not set.
type conditions struct {
	success, failure cel.Program
}

// programsKept bounds the programs a Compiler keeps. A template's arguments are substituted
// into its conditions' text, so each Canary using a template can bring texts of its own; the
// least recently used are dropped past this bound (and compiled again if used again) instead
// of staying in the agent for good.
const programsKept = 512

// Compiler compiles CEL conditions once and keeps the programs, keyed by their text, for
// later measurements (the programsKept most recently used). It is safe for concurrent use.
type Compiler struct {
	env       *cel.Env
	costLimit uint64

	progs *lru.Cache // expression text → cel.Program
}

// NewCompiler returns a Compiler whose expressions see one variable, `result`, of any type.
func NewCompiler() (*Compiler, error) {
	env, err := cel.NewEnv(
		cel.Variable("result", cel.DynType),
		// 0.01 < 1 must compare: a Prometheus value is a double, a literal often an int.
		cel.CrossTypeNumericComparisons(true),
	)
	if err != nil {
		return nil, err
	}
	return &Compiler{env: env, costLimit: costLimit, progs: lru.New(programsKept)}, nil
}

// Compile returns the program of expr, compiling it on first use. field names the expression
// in errors, e.g. "successCondition".
func (c *Compiler) Compile(field, expr string) (cel.Program, error) {
	if p, ok := c.progs.Get(expr); ok {
		return p.(cel.Program), nil
	}
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%s %q does not compile: %v", field, expr, iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("%s %q is of type %s, not bool", field, expr, t)
	}
	p, err := c.env.Program(ast, cel.CostLimit(c.costLimit), cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", field, expr, err)
	}
	c.progs.Add(expr, p)
	return p, nil
}

// compileCheck compiles the conditions that judge check's measurements: its own, or the
// provider's defaults when it sets none.
func (c *Compiler) compileCheck(check *appsv1alpha1.AnalysisCheck) (conditions, error) {
	success, failure := effectiveConditions(check)
	var conds conditions
	var err error
	if success != "" {
		if conds.success, err = c.Compile("successCondition", success); err != nil {
			return conditions{}, err
		}
	}
	if failure != "" {
		if conds.failure, err = c.Compile("failureCondition", failure); err != nil {
			return conditions{}, err
		}
	}
	return conds, nil
}

// effectiveConditions are the check's conditions, or, when it sets neither, what its provider
// means by a good measurement: a Job that succeeded; pods within the podHealth limits (no pods
// at all is neither good nor bad).
func effectiveConditions(check *appsv1alpha1.AnalysisCheck) (success, failure string) {
	if check.SuccessCondition != "" || check.FailureCondition != "" {
		return check.SuccessCondition, check.FailureCondition
	}
	switch p := check.Provider; {
	case p.Job != nil:
		return "result == true", ""
	case p.PodHealth != nil:
		within := fmt.Sprintf("result.restarts <= %d && result.notReady <= %d", p.PodHealth.MaxRestarts, p.PodHealth.MaxNotReady)
		return "result.pods > 0 && " + within, "!(" + within + ")"
	}
	return "", ""
}

// judge evaluates the conditions on one measured value. An expression that fails to evaluate
// (e.g. result[0] of an empty vector) or is not a bool is an error, never a verdict.
func (c conditions) judge(value any) (appsv1alpha1.AnalysisPhase, error) {
	input := map[string]any{"result": celValue(value)}
	eval := func(field string, p cel.Program) (bool, error) {
		out, _, err := p.Eval(input)
		if err != nil {
			return false, fmt.Errorf("%s: %v", field, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Errorf("%s returned %v, not a bool", field, out.Value())
		}
		return b, nil
	}
	var failed, succeeded bool
	var err error
	if c.failure != nil {
		if failed, err = eval("failureCondition", c.failure); err != nil {
			return appsv1alpha1.AnalysisError, err
		}
		if failed {
			return appsv1alpha1.AnalysisFailed, nil
		}
	}
	if c.success != nil {
		if succeeded, err = eval("successCondition", c.success); err != nil {
			return appsv1alpha1.AnalysisError, err
		}
	}
	switch {
	case succeeded:
		return appsv1alpha1.AnalysisSuccessful, nil
	case c.success != nil && c.failure != nil:
		return appsv1alpha1.AnalysisInconclusive, nil
	case c.success != nil:
		return appsv1alpha1.AnalysisFailed, nil
	}
	return appsv1alpha1.AnalysisSuccessful, nil
}

// celValue turns a provider's value into what CEL's default type adapter reads as a number, a
// list of numbers, a bool or a map.
func celValue(v any) any {
	switch v := v.(type) {
	case []float64:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	case map[string]int64:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = x
		}
		return out
	}
	return v
}
