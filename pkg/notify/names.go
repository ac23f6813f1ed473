package notify

// The names a cluster's notification setup uses (docs/notifications.md).
const (
	// ConfigMapName is the ConfigMap, in the agent's namespace, holding services
	// (service.webhook.<name>, service.slack, service.teams), templates (template.<name>) and
	// trigger settings (trigger.<name>).
	ConfigMapName = "workload-notifications"
	// SecretName is the Secret beside it: a value "$key" in a service takes the Secret's key.
	SecretName = "workload-notifications-secret"

	// AnnotationPrefix starts every notification annotation.
	AnnotationPrefix = "notifications.apps.workload.dev/"
	// SubscribePrefix starts a subscription, on a Canary or its namespace:
	// notifications.apps.workload.dev/subscribe.<trigger>.<service>: "<recipients>".
	SubscribePrefix = AnnotationPrefix + "subscribe."
	// AnnotationSent, on a Canary, records what was delivered (Sent, as JSON): written by the
	// agent after each delivery, read by the next leader so that it does not send it again.
	AnnotationSent = AnnotationPrefix + "sent"

	// HeaderID carries a notification's id on every request, the same on a retry and on a
	// new leader's resend, so that a receiver can drop a duplicate.
	HeaderID = "X-Workload-Notification-Id"
)

// Condition and Event reasons of delivery, on the Canary.
const (
	// ConditionDelivered is the Canary's condition for its notifications: False while a
	// delivery fails (it is retried with backoff), True once a delivery succeeds after one
	// failed. A Canary whose notifications never failed does not carry it.
	ConditionDelivered = "NotificationsDelivered"
	// ReasonDeliveryFailed: the last attempt of a delivery failed; the message names the
	// trigger, the service and what went wrong (never a secret).
	ReasonDeliveryFailed = "DeliveryFailed"
	// ReasonDelivered: every pending notification was delivered.
	ReasonDelivered = "Delivered"
	// EventSent is the Normal Event of a delivered notification.
	EventSent = "NotificationSent"
	// EventFailed is the Warning Event of a failed attempt.
	EventFailed = "NotificationFailed"
)
