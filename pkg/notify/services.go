package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/template"
)

// Service delivers a message to one of its recipients.
type Service interface {
	// Request builds the HTTP request delivering m to recipient ("" for the service's own
	// destination).
	Request(ctx context.Context, m Message, recipient string) (*http.Request, error)
	// Check reads the receiver's answer: nil when the message was accepted.
	Check(resp *http.Response, body []byte) error
}

// Header is one HTTP header of a webhook.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Webhook is a generic webhook: service.webhook.<name>.
type Webhook struct {
	// URL receives the request ($key allowed).
	URL string `json:"url"`
	// Method defaults to POST.
	Method string `json:"method,omitempty"`
	// Headers are added to the request ($key allowed in values).
	Headers []Header `json:"headers,omitempty"`
	// Body is a Go text/template over the message (fields ID, Title, Text, Data); empty: a JSON
	// document of the notification (webhookBody).
	Body string `json:"body,omitempty"`

	body *template.Template
}

func (w *Webhook) complete(resolve func(string) (string, error)) error {
	var err error
	if w.URL, err = resolve(w.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if err := checkURL("url", w.URL); err != nil {
		return err
	}
	if w.Method == "" {
		w.Method = http.MethodPost
	}
	w.Method = strings.ToUpper(w.Method)
	for i := range w.Headers {
		if w.Headers[i].Value, err = resolve(w.Headers[i].Value); err != nil {
			return fmt.Errorf("headers[%d]: %w", i, err)
		}
	}
	if w.Body != "" {
		fm := template.FuncMap{"json": jsonString}
		for k, v := range funcs {
			fm[k] = v
		}
		if w.body, err = template.New("body").Funcs(fm).Option("missingkey=error").Parse(w.Body); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	}
	return nil
}

// webhookBody is a webhook's default body.
type webhookBody struct {
	ID        string   `json:"id"`
	Trigger   string   `json:"trigger"`
	Canary    string   `json:"canary"`
	Namespace string   `json:"namespace"`
	Phase     string   `json:"phase"`
	Step      int32    `json:"step"`
	Steps     int32    `json:"steps"`
	Images    []string `json:"images,omitempty"`
	Title     string   `json:"title"`
	Text      string   `json:"text"`
	Command   string   `json:"command,omitempty"`
}

// Request implements Service.
func (w *Webhook) Request(ctx context.Context, m Message, _ string) (*http.Request, error) {
	var body []byte
	if w.body != nil {
		var b bytes.Buffer
		if err := w.body.Execute(&b, m); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		body = b.Bytes()
	} else {
		d := m.Data
		body, _ = json.Marshal(webhookBody{ID: m.ID, Trigger: d.Trigger, Canary: d.Canary, Namespace: d.Namespace, Phase: d.Phase,
			Step: d.Step, Steps: d.Steps, Images: d.Images, Title: m.Title, Text: m.Text, Command: d.Command})
	}
	var rd io.Reader
	if w.Method != http.MethodGet && w.Method != http.MethodHead {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, w.Method, w.URL, rd)
	if err != nil {
		return nil, errors.New("building the request failed") // its error would show the URL
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range w.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	return req, nil
}

// Check implements Service: any 2xx answer.
func (w *Webhook) Check(resp *http.Response, _ []byte) error { return statusError(resp) }

// Slack posts to Slack: through an incoming webhook (webhookURL, which names its channel), or
// as a bot (token, with the channels as recipients) through chat.postMessage.
type Slack struct {
	WebhookURL string `json:"webhookURL,omitempty"`
	Token      string `json:"token,omitempty"`
	// APIURL is Slack's Web API, https://slack.com/api by default.
	APIURL string `json:"apiURL,omitempty"`
}

func (s *Slack) complete(resolve func(string) (string, error)) error {
	var err error
	if s.WebhookURL, err = resolve(s.WebhookURL); err != nil {
		return fmt.Errorf("webhookURL: %w", err)
	}
	if s.Token, err = resolve(s.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if (s.WebhookURL == "") == (s.Token == "") {
		return errors.New("set exactly one of webhookURL (an incoming webhook) and token (a bot token)")
	}
	if s.WebhookURL != "" {
		return checkURL("webhookURL", s.WebhookURL)
	}
	if s.APIURL == "" {
		s.APIURL = "https://slack.com/api"
	}
	return checkURL("apiURL", s.APIURL)
}

// slackMessage is Slack's message payload (https://api.slack.com/reference/messaging/payload):
// text is the fallback and notification text, blocks what is shown.
type slackMessage struct {
	Channel string       `json:"channel,omitempty"`
	Text    string       `json:"text"`
	Blocks  []slackBlock `json:"blocks,omitempty"`
}

type slackBlock struct {
	Type string    `json:"type"`
	Text slackText `json:"text"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Request implements Service.
func (s *Slack) Request(ctx context.Context, m Message, recipient string) (*http.Request, error) {
	msg := slackMessage{Text: m.Title, Blocks: []slackBlock{
		{Type: "header", Text: slackText{Type: "plain_text", Text: truncate(m.Title, 150)}},
		{Type: "section", Text: slackText{Type: "mrkdwn", Text: truncate(m.Text, 3000)}},
	}}
	target := s.WebhookURL
	if s.Token != "" {
		if recipient == "" {
			return nil, errors.New("a Slack bot needs a channel: subscribe with the channel as recipient")
		}
		msg.Channel, target = recipient, strings.TrimSuffix(s.APIURL, "/")+"/chat.postMessage"
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("building the request failed")
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	return req, nil
}

// Check implements Service: the Web API answers 200 with {"ok": false, "error": "..."} when it
// refuses a message.
func (s *Slack) Check(resp *http.Response, body []byte) error {
	if err := statusError(resp); err != nil {
		return err
	}
	if s.Token == "" {
		return nil
	}
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return errors.New("Slack answered with something that is not its API's JSON")
	}
	if !r.OK {
		return fmt.Errorf("Slack refused the message: %s", r.Error)
	}
	return nil
}

// Teams posts Adaptive Cards to Microsoft Teams channels through Workflows webhooks ("Post to a
// channel when a webhook request is received"), which replaced Office 365 connectors: url for
// one channel, or recipientUrls naming a webhook per channel for the subscriptions' recipients.
type Teams struct {
	URL           string            `json:"url,omitempty"`
	RecipientURLs map[string]string `json:"recipientUrls,omitempty"`
}

func (t *Teams) complete(resolve func(string) (string, error)) error {
	var err error
	if t.URL, err = resolve(t.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if t.URL != "" {
		if err := checkURL("url", t.URL); err != nil {
			return err
		}
	}
	for name, u := range t.RecipientURLs {
		if t.RecipientURLs[name], err = resolve(u); err != nil {
			return fmt.Errorf("recipientUrls.%s: %w", name, err)
		}
		if err := checkURL("recipientUrls."+name, t.RecipientURLs[name]); err != nil {
			return err
		}
	}
	if t.URL == "" && len(t.RecipientURLs) == 0 {
		return errors.New("set url or recipientUrls")
	}
	return nil
}

// teamsMessage is the message a Workflows webhook takes: one Adaptive Card attachment.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string           `json:"$schema"`
	Type    string           `json:"type"`
	Version string           `json:"version"`
	Body    []map[string]any `json:"body"`
}

// Request implements Service.
func (t *Teams) Request(ctx context.Context, m Message, recipient string) (*http.Request, error) {
	target := t.URL
	if recipient != "" {
		u, ok := t.RecipientURLs[recipient]
		if !ok {
			return nil, fmt.Errorf("recipient %q is not one of the Teams service's recipientUrls", recipient)
		}
		target = u
	}
	if target == "" {
		return nil, errors.New("the Teams service has no url: subscribe with one of its recipientUrls as recipient")
	}
	d := m.Data
	facts := []map[string]string{{"title": "Canary", "value": d.Ref}, {"title": "Phase", "value": d.Phase},
		{"title": "Step", "value": fmt.Sprintf("%d of %d", d.Step, d.Steps)}}
	if len(d.Images) > 0 {
		facts = append(facts, map[string]string{"title": "Images", "value": strings.Join(d.Images, ", ")})
	}
	if d.Command != "" {
		facts = append(facts, map[string]string{"title": "To act", "value": d.Command})
	}
	card := teamsCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
		Body: []map[string]any{
			{"type": "TextBlock", "text": m.Title, "weight": "Bolder", "size": "Medium", "wrap": true},
			{"type": "TextBlock", "text": m.Text, "wrap": true},
			{"type": "FactSet", "facts": facts},
		}}
	body, _ := json.Marshal(teamsMessage{Type: "message", Attachments: []teamsAttachment{
		{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("building the request failed")
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// Check implements Service: Workflows answers 202 Accepted.
func (t *Teams) Check(resp *http.Response, _ []byte) error { return statusError(resp) }

// statusError refuses an answer that is not 2xx, naming its status only: a body may echo what
// was sent.
func statusError(resp *http.Response) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// jsonString is the body templates' json function: v as a JSON value.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Deliver sends m to d through client, whose transport is the caller's (the agent's is fenced).
// The error never holds a URL, header or secret of the service: only what went wrong (callers
// name the destination).
func (c *Config) Deliver(ctx context.Context, client *http.Client, d Destination, m Message) error {
	svc, ok := c.Services[d.Service]
	if !ok {
		return fmt.Errorf("no service %q in ConfigMap %s", d.Service, ConfigMapName)
	}
	req, err := svc.Request(ctx, m, d.Recipient)
	if err != nil {
		return errors.New(c.Redact(err.Error()))
	}
	req.Header.Set(HeaderID, m.ID)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("%s %s", req.Method, redactRequest(req, c.Redact(err.Error())))
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := svc.Check(resp, body); err != nil {
		return errors.New(redactRequest(req, c.Redact(err.Error())))
	}
	return nil
}

// redactRequest removes the request's URL, host, path, query and header values from s: a transport's
// error may name the path (a Slack or Teams webhook's path is its secret), and a header value
// may be a token not taken from the Secret.
func redactRequest(req *http.Request, s string) string {
	hide := []string{req.URL.String(), req.URL.RawQuery, req.URL.EscapedPath(), req.URL.Path, req.URL.Host, req.URL.Hostname()}
	for _, vs := range req.Header {
		hide = append(hide, vs...)
	}
	for _, h := range hide {
		if len(h) > 1 {
			s = strings.ReplaceAll(s, h, "[redacted]")
		}
	}
	return s
}
