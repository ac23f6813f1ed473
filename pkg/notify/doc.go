// Package notify tells people about a Canary's release where they already are: a generic
// webhook, Slack or Microsoft Teams (docs/notifications.md). It holds what the agent's
// notifications controller (pkg/controller/notifications) and the plugin's `notify test` verb
// share:
//
//   - the names: the ConfigMap and Secret of the agent's namespace, the annotations;
//   - Config, read from that ConfigMap and Secret: services, templates, trigger settings;
//   - Triggers, derived from the Canary's status, conditions and spec as the canary controller
//     writes them (never from its Events, which are not a record);
//   - Subscriptions, read from the annotations of a Canary and of its namespace;
//   - Sent, the record on the Canary of what was delivered, so that no agent sends it again;
//   - the services' payloads and their delivery over HTTP, with secrets kept out of every error.
package notify
