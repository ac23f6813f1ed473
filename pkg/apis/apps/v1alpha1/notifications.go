package v1alpha1

// The meanings of release notifications (docs/notifications.md) on a Canary: written by the
// agent's notifications controller, read by the plugin (kubectl workload notify test) and by
// people. pkg/notify names them for its users.
const (
	// AnnotationNotificationsPrefix starts every notification annotation. Subscriptions, on a
	// Canary or its namespace, are AnnotationNotificationsPrefix + "subscribe.<trigger>.<service>".
	AnnotationNotificationsPrefix = "notifications.apps.workload.dev/"
	// AnnotationNotificationsSent, on a Canary, records what was delivered (per trigger, its
	// last occurrence and the destinations reached, as JSON), so that no agent sends it again.
	AnnotationNotificationsSent = AnnotationNotificationsPrefix + "sent"

	// ConditionNotificationsDelivered is False while a notification of the Canary fails to be
	// delivered (it is retried with backoff), True once one is delivered after a failure; absent
	// on a Canary whose notifications never failed.
	ConditionNotificationsDelivered = "NotificationsDelivered"
	// ReasonNotificationFailed: the last attempt of a delivery failed (the condition's message
	// names the trigger, the destination and what went wrong, never a secret).
	ReasonNotificationFailed = "DeliveryFailed"
	// ReasonNotificationsDelivered: every notification owed was delivered.
	ReasonNotificationsDelivered = "Delivered"

	// EventNotificationSent is the Normal Event of a delivered notification.
	EventNotificationSent = "NotificationSent"
	// EventNotificationFailed is the Warning Event of a failed attempt, or of subscription
	// annotations that were ignored.
	EventNotificationFailed = "NotificationFailed"
)
