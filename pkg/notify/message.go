package notify

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Data is what a template is executed with.
type Data struct {
	// Trigger is the trigger's name (on-paused).
	Trigger string
	// Canary and Namespace name the Canary; Ref is "canary/<name> -n <namespace>", as the
	// plugin's commands take it.
	Canary, Namespace, Ref string
	// Phase is the Canary's status.phase; Step and Steps the current step and their number.
	Phase       string
	Step, Steps int32
	// Images are the released pod template's containers as "name=image" (spec.canary); for a
	// Canary releasing a workload in place, the images are the workload's: Target names it
	// ("StatefulSet/web") and Revision is the revision being released.
	Images           []string
	Target, Revision string
	// Checks are the current step's analysis checks (status.analysis).
	Checks []Check
	// Reason says why, in the agent's words: the abort's message, the Degraded condition's,
	// or the release's status.message.
	Reason string
	// Command is the plugin command to act (empty when there is nothing to do).
	Command string
	// Title is the template's title as rendered, for the message to use.
	Title string
}

// Check is one analysis check as the message shows it.
type Check struct {
	Name, Phase, Message string
	// Values are its last measured values, oldest first.
	Values []string
}

// NewData describes cn for trigger t.
func NewData(cn *v1alpha1.Canary, t Trigger) Data {
	ref := fmt.Sprintf("canary/%s -n %s", cn.Name, cn.Namespace)
	d := Data{
		Trigger: t.Name, Canary: cn.Name, Namespace: cn.Namespace, Ref: ref,
		Phase: string(cn.Status.Phase), Step: cn.Status.CurrentBatch, Steps: int32(len(cn.Status.Batches)),
		Command: t.command(ref), Reason: cn.Status.Message,
	}
	for _, c := range cn.Spec.Canary.Template.Spec.Containers {
		d.Images = append(d.Images, c.Name+"="+c.Image)
	}
	if r := cn.Spec.TargetRef; r != nil {
		d.Target = r.Kind + "/" + r.Name
		if cn.Status.Target != nil {
			d.Revision = cn.Status.Target.UpdateRevision
		}
	}
	for _, a := range cn.Status.Analysis {
		c := Check{Name: a.Name, Phase: string(a.Phase), Message: a.Message}
		for _, m := range a.Measurements {
			if m.Value != "" {
				c.Values = append(c.Values, m.Value)
			}
		}
		d.Checks = append(d.Checks, c)
	}
	sort.Slice(d.Checks, func(i, j int) bool { return d.Checks[i].Name < d.Checks[j].Name })
	switch t.Name {
	case OnRolledBack:
		if a := cn.Status.Abort; a != nil {
			d.Reason, d.Step = a.Message, a.Step
		}
	case OnDeadlineExceeded, OnContested:
		if c := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionDegraded); c != nil {
			d.Reason = c.Message
		}
	}
	return d
}

// Template is a message: a title and a body, Go text/templates over Data.
type Template struct {
	Title   string `json:"title"`
	Message string `json:"message"`

	name           string
	title, message *template.Template
}

func (t *Template) parse(name string) error {
	t.name = name
	var err error
	if t.title, err = template.New(name + ".title").Funcs(funcs).Option("missingkey=error").Parse(t.Title); err != nil {
		return fmt.Errorf("title: %w", err)
	}
	if t.Message == "" {
		t.Message = defaultMessage
	}
	if t.message, err = template.New(name + ".message").Funcs(funcs).Option("missingkey=error").Parse(t.Message); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	return nil
}

// Message is a rendered notification.
type Message struct {
	// ID names the notification, the same on every attempt (HeaderID).
	ID string
	// Title and Text are the rendered template.
	Title, Text string
	Data        Data
}

// Render executes the template over d.
func (t *Template) Render(d Data) (Message, error) {
	var title, text bytes.Buffer
	if err := t.title.Execute(&title, d); err != nil {
		return Message{}, fmt.Errorf("template %s: title: %w", t.name, err)
	}
	d.Title = strings.TrimSpace(title.String())
	if err := t.message.Execute(&text, d); err != nil {
		return Message{}, fmt.Errorf("template %s: message: %w", t.name, err)
	}
	return Message{Title: d.Title, Text: strings.TrimSpace(text.String()), Data: d}, nil
}

// defaultTitles are the built-in triggers' titles.
var defaultTitles = map[string]string{
	OnStepStarted:          `canary/{{.Canary}}: step {{.Step}} of {{.Steps}} started`,
	OnPaused:               `canary/{{.Canary}}: paused at step {{.Step}} of {{.Steps}}, waiting for promotion`,
	OnAnalysisInconclusive: `canary/{{.Canary}}: analysis inconclusive at step {{.Step}} of {{.Steps}}, waiting for a person`,
	OnRolledBack:           `canary/{{.Canary}}: rolled back by itself at step {{.Step}} of {{.Steps}}`,
	OnDeadlineExceeded:     `canary/{{.Canary}}: step {{.Step}} of {{.Steps}} exceeded its progress deadline`,
	OnAborted:              `canary/{{.Canary}}: aborted, rolling back to the stable version`,
	OnCompleted:            `canary/{{.Canary}}: release completed`,
	OnContested:            `canary/{{.Canary}}: contested by another controller, the release is held`,
}

// defaultMessage is every default template's body: what happened, the images, the checks'
// values and the command to act.
const defaultMessage = `{{.Title}} (namespace {{.Namespace}})
{{with .Reason}}{{.}}
{{end}}{{with .Images}}Images: {{join . ", "}}
{{end}}{{with .Target}}Target: {{.}}{{with $.Revision}}, revision {{.}}{{end}}
{{end}}{{range .Checks}}Check {{.Name}}: {{.Phase}}{{with .Values}}, values {{join . ", "}}{{end}}{{with .Message}} ({{.}}){{end}}
{{end}}{{with .Command}}To act: {{.}}{{end}}`

// defaultTemplate returns a built-in trigger's default template.
func defaultTemplate(trigger string) *Template {
	t := &Template{Title: defaultTitles[trigger], Message: defaultMessage}
	if err := t.parse(trigger); err != nil {
		panic(err) // the built-in texts are checked by TestDefaultTemplates
	}
	return t
}
