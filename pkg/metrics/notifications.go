package metrics

import "github.com/prometheus/client_golang/prometheus"

// notifications counts delivery attempts of release notifications (docs/notifications.md), so
// that an alert can tell a team its channel stopped hearing about releases.
var notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "workload_agent_notifications_total",
	Help: "Delivery attempts of release notifications, per trigger, service and result (sent, failed).",
}, []string{"trigger", "service", "result"})

func init() {
	Registry.MustRegister(notifications)
}

// ObserveNotification counts one delivery attempt of trigger to service; err is its failure.
func ObserveNotification(trigger, service string, err error) {
	result := "sent"
	if err != nil {
		result = "failed"
	}
	notifications.WithLabelValues(trigger, service, result).Inc()
}
