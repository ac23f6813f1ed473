package analysis

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Args are the values of a template's arguments for one use of it.
type Args map[string]string

// placeholder is {{args.NAME}}, spaces allowed inside the braces.
var placeholder = regexp.MustCompile(`\{\{\s*args\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// UnsetArgsError names the arguments a template declares without a default that the use of it
// left without a value.
type UnsetArgsError struct{ Names []string }

func (e *UnsetArgsError) Error() string {
	return "argument " + strings.Join(e.Names, ", ") + " has no value: give it in args or a default in the template"
}

// BindArgs gives each declared argument its value: the one given, else the template's
// default. Given values for arguments the template does not declare are refused, and so is a
// declared argument left without a value (*UnsetArgsError).
func BindArgs(declared []appsv1alpha1.AnalysisArg, given map[string]string) (Args, error) {
	out := Args{}
	known := map[string]bool{}
	var unset []string
	for _, a := range declared {
		known[a.Name] = true
		if v, ok := given[a.Name]; ok {
			out[a.Name] = v
		} else if a.Value != nil {
			out[a.Name] = *a.Value
		} else {
			unset = append(unset, a.Name)
		}
	}
	var unknown []string
	for name := range given {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("the template declares no argument %s", strings.Join(unknown, ", "))
	}
	if len(unset) > 0 {
		return nil, &UnsetArgsError{Names: unset}
	}
	return out, nil
}

// Substitute returns a copy of check with {{args.NAME}} replaced in its conditions, query,
// address, Job template and (for web checks) URL, headers and body, each value escaped for
// where it stands, so that a value cannot change what the text around it means:
//
//   - a PromQL query or a CEL condition: inside a quoted string the value is escaped for that
//     string; outside quotes it must be a plain token (PromQL: a number, a duration or a name;
//     CEL: a number or a boolean), anything else is refused;
//   - a URL: percent-encoded for the path or the query it stands in; in the scheme or host it
//     must be a host name, an address or a port;
//   - a header value: taken as it is, but never with a line break.
//
// A placeholder naming an argument not in args is an error, and values are never expanded
// again (a value holding "{{args.x}}" stays as it is).
func Substitute(check *appsv1alpha1.AnalysisCheck, args Args) (*appsv1alpha1.AnalysisCheck, error) {
	out := check.DeepCopy()
	sub := substituter{check: check.Name, args: args}
	sub.text("successCondition", &out.SuccessCondition, celArg)
	sub.text("failureCondition", &out.FailureCondition, celArg)
	if p := out.Provider.Prometheus; p != nil {
		sub.text("provider.prometheus.address", &p.Address, urlArg)
		sub.text("provider.prometheus.query", &p.Query, promQLArg)
		sub.headers("provider.prometheus.headers", p.Headers)
	}
	if w := out.Provider.Web; w != nil {
		sub.text("provider.web.url", &w.URL, urlArg)
		sub.headers("provider.web.headers", w.Headers)
		sub.text("provider.web.body", &w.Body, jsonArg)
	}
	if j := out.Provider.Job; j != nil {
		for i := range j.Template.Spec.Template.Spec.Containers {
			c := &j.Template.Spec.Template.Spec.Containers[i]
			for k := range c.Args {
				sub.text("provider.job container args", &c.Args[k], verbatim)
			}
			for k := range c.Env {
				sub.text("provider.job container env", &c.Env[k].Value, verbatim)
			}
		}
	}
	return out, sub.err
}

// escaper turns a value into the text that stands for it, given the template text before it.
type escaper func(before, value string) (string, error)

type substituter struct {
	check string
	args  Args
	err   error
}

// text substitutes the placeholders of *s; the first error is kept and stops the rest.
func (x *substituter) text(field string, s *string, esc escaper) {
	if x.err != nil || !strings.Contains(*s, "{{") {
		return
	}
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(*s, -1) {
		name := (*s)[m[2]:m[3]]
		v, ok := x.args[name]
		if !ok {
			x.err = fmt.Errorf("check %s: %s uses {{args.%s}}, which the template does not declare", x.check, field, name)
			return
		}
		e, err := esc((*s)[:m[0]], v)
		if err != nil {
			x.err = fmt.Errorf("check %s: %s: argument %s: %v", x.check, field, name, err)
			return
		}
		b.WriteString((*s)[last:m[0]])
		b.WriteString(e)
		last = m[1]
	}
	b.WriteString((*s)[last:])
	*s = b.String()
}

func (x *substituter) headers(field string, hs []appsv1alpha1.WebHeader) {
	for i := range hs {
		if hs[i].Value != nil {
			x.text(field, hs[i].Value, headerArg)
		}
	}
}

func verbatim(_, v string) (string, error) { return v, nil }

var (
	promToken = regexp.MustCompile(`^[A-Za-z0-9_:.]+$`)
	celToken  = regexp.MustCompile(`^(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|true|false)$`)
	hostToken = regexp.MustCompile(`^[A-Za-z0-9.\-:\[\]]+$`)
)

func promQLArg(before, v string) (string, error) {
	return quoted(before, v, "\"'`", promToken, "a number, a duration or a name")
}

func celArg(before, v string) (string, error) {
	return quoted(before, v, "\"'", celToken, "a number, true or false")
}

func jsonArg(before, v string) (string, error) {
	return quoted(before, v, `"`, celToken, "a number, true or false")
}

// quoted escapes v for the string literal open at the end of before, or checks that it is a
// plain token when no string is open.
func quoted(before, v, quotes string, token *regexp.Regexp, tokenIs string) (string, error) {
	switch q := openQuote(before, quotes); q {
	case 0:
		if !token.MatchString(v) {
			return "", fmt.Errorf("%q stands outside quotes and is not %s: put the placeholder in quotes", v, tokenIs)
		}
		return v, nil
	case '`':
		if strings.ContainsRune(v, '`') {
			return "", fmt.Errorf("%q holds a backquote, which a raw string cannot escape", v)
		}
		return v, nil
	default:
		r := strings.NewReplacer(`\`, `\\`, string(q), `\`+string(q), "\n", `\n`, "\r", `\r`, "\t", `\t`)
		return r.Replace(v), nil
	}
}

// openQuote is the quote character of the string literal still open at the end of s (0 if
// none); a backslash escapes the next character inside a string, except in a raw one.
func openQuote(s, quotes string) byte {
	var open byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case open == 0 && strings.IndexByte(quotes, c) >= 0:
			open = c
		case open != 0 && open != '`' && c == '\\':
			i++
		case c == open:
			open = 0
		}
	}
	return open
}

// urlArg encodes v for the part of a URL it stands in.
func urlArg(before, v string) (string, error) {
	rest := before
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	} else {
		return "", fmt.Errorf("stands before the URL's scheme://: the scheme cannot come from an argument")
	}
	switch {
	case strings.ContainsAny(rest, "?#"):
		return url.QueryEscape(v), nil
	case strings.Contains(rest, "/"):
		return url.PathEscape(v), nil
	case !hostToken.MatchString(v):
		return "", fmt.Errorf("%q stands in the URL's host and is not a host name, address or port", v)
	}
	return v, nil
}

// headerArg refuses a value that would end the header line and start another.
func headerArg(_, v string) (string, error) {
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("%q holds a line break, which would end the header", v)
	}
	return v, nil
}
