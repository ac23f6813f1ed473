package notify

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Keys of the ConfigMap.
const (
	keyWebhook  = "service.webhook."
	keySlack    = "service.slack"
	keyTeams    = "service.teams"
	keyTemplate = "template."
	keyTrigger  = "trigger."
)

// Config is a cluster's notification setup, read from the ConfigMap and the Secret.
type Config struct {
	// Services by the name subscriptions use: "slack", "teams", or a webhook's name.
	Services map[string]Service
	// Templates by name; a template named like a built-in trigger replaces its default.
	Templates map[string]*Template
	// TriggerTemplates maps a trigger to the template it sends (trigger.<name>: {template: x}).
	TriggerTemplates map[string]string
	// secrets are the Secret's values, never to be shown: Redact replaces them.
	secrets []string
}

// TriggerSetting is the value of a trigger.<name> key.
type TriggerSetting struct {
	// Template names the template the trigger sends instead of its default.
	Template string `json:"template"`
}

// secretRef is a "$key" in a service's value.
var secretRef = regexp.MustCompile(`\$[A-Za-z0-9_.-]+`)

// LoadConfig reads the ConfigMap's keys (YAML values) and resolves "$key" from the Secret (nil
// when there is none). Every error names the key it is about and never a secret's value.
func LoadConfig(cm *corev1.ConfigMap, secret *corev1.Secret) (*Config, error) {
	c := &Config{Services: map[string]Service{}, Templates: map[string]*Template{}, TriggerTemplates: map[string]string{}}
	values := map[string]string{}
	if secret != nil {
		for k, v := range secret.Data {
			values[k] = string(v)
			if len(v) > 0 {
				c.secrets = append(c.secrets, string(v))
			}
		}
		for k, v := range secret.StringData {
			values[k] = v
			c.secrets = append(c.secrets, v)
		}
	}
	// Longest first, so that a secret containing another is redacted whole.
	sort.Slice(c.secrets, func(i, j int) bool { return len(c.secrets[i]) > len(c.secrets[j]) })
	if cm == nil {
		return c, nil
	}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		if err := c.load(k, cm.Data[k], values); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", ConfigMapName, k, c.Redact(err.Error())))
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}

func (c *Config) load(key, value string, secrets map[string]string) error {
	resolve := func(s string) (string, error) { return resolveSecrets(s, secrets) }
	switch {
	case strings.HasPrefix(key, keyWebhook):
		name := strings.TrimPrefix(key, keyWebhook)
		if name == "" || name == "slack" || name == "teams" {
			return fmt.Errorf("a webhook needs a name other than slack and teams: service.webhook.<name>")
		}
		return c.loadService(name, value, &Webhook{}, resolve)
	case key == keySlack:
		return c.loadService("slack", value, &Slack{}, resolve)
	case key == keyTeams:
		return c.loadService("teams", value, &Teams{}, resolve)
	case strings.HasPrefix(key, keyTemplate):
		t := &Template{}
		if err := yaml.UnmarshalStrict([]byte(value), t); err != nil {
			return err
		}
		if err := t.parse(strings.TrimPrefix(key, keyTemplate)); err != nil {
			return err
		}
		c.Templates[t.name] = t
	case strings.HasPrefix(key, keyTrigger):
		name := strings.TrimPrefix(key, keyTrigger)
		if _, ok := TriggerNamed(name); !ok || !strings.HasPrefix(name, triggerPrefix) {
			return fmt.Errorf("not a built-in trigger: %s", strings.Join(TriggerNames(), ", "))
		}
		var s TriggerSetting
		if err := yaml.UnmarshalStrict([]byte(value), &s); err != nil {
			return err
		}
		c.TriggerTemplates[name] = s.Template
	default:
		return fmt.Errorf("unknown key: keys are service.webhook.<name>, service.slack, service.teams, template.<name> and trigger.<name>")
	}
	return nil
}

// configurable is a service read from YAML, then completed: its $key resolved, its fields
// checked and defaulted.
type configurable interface {
	Service
	complete(resolve func(string) (string, error)) error
}

func (c *Config) loadService(name, value string, s configurable, resolve func(string) (string, error)) error {
	if err := yaml.UnmarshalStrict([]byte(value), s); err != nil {
		return err
	}
	if err := s.complete(resolve); err != nil {
		return err
	}
	c.Services[name] = s
	return nil
}

// resolveSecrets replaces every $key of s by the Secret's value.
func resolveSecrets(s string, secrets map[string]string) (string, error) {
	var missing []string
	out := secretRef.ReplaceAllStringFunc(s, func(ref string) string {
		v, ok := secrets[ref[1:]]
		if !ok {
			missing = append(missing, ref)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: no such key in Secret %s", strings.Join(missing, ", "), SecretName)
	}
	return out, nil
}

// Redact replaces every value of the Secret in s, so that an error or a message can be shown.
func (c *Config) Redact(s string) string {
	if c == nil {
		return s
	}
	for _, v := range c.secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// TemplateFor returns the template trigger sends: the one its trigger.<name> names, else a
// template named like the trigger, else its default.
func (c *Config) TemplateFor(trigger string) (*Template, error) {
	if name := c.TriggerTemplates[trigger]; name != "" {
		t, ok := c.Templates[name]
		if !ok {
			return nil, fmt.Errorf("%s%s names template %q, which %s does not define", keyTrigger, trigger, name, ConfigMapName)
		}
		return t, nil
	}
	if t, ok := c.Templates[trigger]; ok {
		return t, nil
	}
	return defaultTemplate(trigger), nil
}

// checkURL refuses what is not an absolute http(s) URL, without showing it (it may hold a
// token, as Slack's and Teams' webhook URLs do).
func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http or https URL", field)
	}
	return nil
}

// funcs are the functions templates may call.
var funcs = template.FuncMap{
	"join": strings.Join,
}

// SecretRefs returns the $key references of a ConfigMap value.
func SecretRefs(value string) []string { return secretRef.FindAllString(value, -1) }
