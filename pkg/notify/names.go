package notify

import "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"

// The names a cluster's notification setup uses (docs/notifications.md). What is written on a
// Canary is declared in the API package (v1alpha1), where the plugin reads it too.
const (
	// ConfigMapName is the ConfigMap, in the agent's namespace, holding services
	// (service.webhook.<name>, service.slack, service.teams), templates (template.<name>) and
	// trigger settings (trigger.<name>).
	ConfigMapName = "workload-notifications"
	// SecretName is the Secret beside it: a value "$key" in a service takes the Secret's key.
	SecretName = "workload-notifications-secret"

	// SubscribePrefix starts a subscription, on a Canary or its namespace:
	// notifications.apps.workload.dev/subscribe.<trigger>.<service>: "<recipients>".
	SubscribePrefix = v1alpha1.AnnotationNotificationsPrefix + "subscribe."
	// AnnotationSent, on a Canary, records what was delivered (Sent, as JSON).
	AnnotationSent = v1alpha1.AnnotationNotificationsSent

	// HeaderID carries a notification's id on every request, the same on a retry and on a
	// new leader's resend, so that a receiver can drop a duplicate.
	HeaderID = "X-Workload-Notification-Id"
)

// Condition and Event reasons of delivery, on the Canary.
const (
	ConditionDelivered   = v1alpha1.ConditionNotificationsDelivered
	ReasonDeliveryFailed = v1alpha1.ReasonNotificationFailed
	ReasonDelivered      = v1alpha1.ReasonNotificationsDelivered
	EventSent            = v1alpha1.EventNotificationSent
	EventFailed          = v1alpha1.EventNotificationFailed
)
