package notifications

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
)

// delivery is one notification to send: a trigger's occurrence to one destination.
type delivery struct {
	fired notify.Fired
	to    notify.Destination
}

// deliveries returns what pending triggers still owe their subscribers, reading the Canary's
// namespace for its subscriptions and the record for what was sent already. Triggers that owe
// nothing are marked handled.
func (c *Controller) deliveries(ctx context.Context, cn *v1alpha1.Canary, st *canaryState, pending []notify.Fired) ([]delivery, error) {
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, cn.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s for its notification subscriptions: %w", cn.Namespace, err)
	}
	subs, err := notify.ParseSubscriptions(cn.Annotations, ns.Annotations)
	c.mu.Lock()
	if err != nil && err.Error() != st.reported {
		c.Recorder.Eventf(cn, corev1.EventTypeWarning, notify.EventFailed, "subscriptions ignored: %v", err)
	}
	st.reported = ""
	if err != nil {
		st.reported = err.Error()
	}
	c.mu.Unlock()

	sent, err := notify.ParseSent(cn.Annotations[notify.AnnotationSent])
	if err != nil {
		klog.FromContext(ctx).Info("Sending again what the record cannot tell", "canary", klog.KObj(cn), "err", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sent.Merge(st.sent)
	st.sent = sent
	var out []delivery
	for _, f := range pending {
		owed := false
		for _, d := range subs[f.Trigger.Name] {
			if !sent.Has(f.Trigger.Name, f.Occurrence, d) {
				out, owed = append(out, delivery{fired: f, to: d}), true
			}
		}
		if !owed {
			st.handled[f.Trigger.Name] = f.Occurrence
		}
	}
	return out, nil
}

// deliver sends each delivery, records each success on the Canary at once, and reports
// failures as the condition and an Event, retrying with backoff.
func (c *Controller) deliver(ctx context.Context, cn *v1alpha1.Canary, st *canaryState, ds []delivery) error {
	if len(ds) == 0 {
		return c.settled(ctx, cn, st)
	}
	c.mu.Lock()
	wait := st.retryAt.Sub(c.clock.Now())
	c.mu.Unlock()
	if wait > 0 {
		c.Queue.AddAfter(keyOf(cn), wait)
		return nil
	}
	cfg, err := c.config(ctx)
	var failures []string
	if err != nil {
		failures = append(failures, cfg.Redact(err.Error()))
	} else {
		for _, d := range ds {
			if err := c.send(ctx, cfg, cn, st, d); err != nil {
				if ctx.Err() != nil || errors.Is(err, errFenced) || errors.Is(err, errUnrecorded) {
					return err
				}
				failures = append(failures, fmt.Sprintf("%s to %s: %v", d.fired.Trigger.Name, d.to, err))
			}
		}
	}
	if len(failures) == 0 {
		return c.settled(ctx, cn, st)
	}
	return c.failed(ctx, cn, st, strings.Join(failures, "; "))
}

// config reads the ConfigMap and the Secret of the agent's namespace (the Secret may be absent
// when no service needs one). They are read when something is to be sent, not cached: a
// change applies to the next notification, and no secret stays in the agent's memory.
func (c *Controller) config(ctx context.Context) (*notify.Config, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(c.namespace).Get(ctx, notify.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", c.namespace, notify.ConfigMapName, err)
	}
	secret, err := c.kube.CoreV1().Secrets(c.namespace).Get(ctx, notify.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secret, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", c.namespace, notify.SecretName, err)
	}
	return notify.LoadConfig(cm, secret)
}

// send renders and delivers one notification, then records it on the Canary.
func (c *Controller) send(ctx context.Context, cfg *notify.Config, cn *v1alpha1.Canary, st *canaryState, d delivery) error {
	t, err := cfg.TemplateFor(d.fired.Trigger.Name)
	if err != nil {
		return err
	}
	m, err := t.Render(notify.NewData(cn, d.fired.Trigger))
	if err != nil {
		return err
	}
	m.ID = NotificationID(cn.UID, d.fired, d.to)
	if err := c.checkFence(); err != nil {
		return err
	}
	err = cfg.Deliver(ctx, c.http, d.to, m)
	metrics.ObserveNotification(d.fired.Trigger.Name, d.to.Service, err)
	if err != nil {
		if ferr := c.checkFence(); ferr != nil {
			return ferr
		}
		return err
	}
	c.mu.Lock()
	st.sent.Add(d.fired.Trigger.Name, d.fired.Occurrence, d.to)
	st.unrecorded = true
	c.mu.Unlock()
	c.Recorder.Eventf(cn, corev1.EventTypeNormal, notify.EventSent, "%s sent to %s", d.fired.Trigger.Name, d.to)
	return c.record(ctx, cn, st)
}

// errUnrecorded is a delivery made whose record the API server refused: this process remembers
// it and writes the record again at the next sync, before sending anything else.
var errUnrecorded = errors.New("recording sent notifications")

// record writes this process's record of deliveries into the Canary's annotation: a merge patch
// of that one key, so that it cannot undo any other writer's change. Written after each
// delivery, so that a new leader finds every delivery but one made in the instant before the
// agent died.
func (c *Controller) record(ctx context.Context, cn *v1alpha1.Canary, st *canaryState) error {
	c.mu.Lock()
	if !st.unrecorded {
		c.mu.Unlock()
		return nil
	}
	value := st.sent.String()
	c.mu.Unlock()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{notify.AnnotationSent: value}}})
	_, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%w on Canary %s/%s: %v", errUnrecorded, cn.Namespace, cn.Name, err)
	}
	c.mu.Lock()
	if st.sent.String() == value {
		st.unrecorded = false
	}
	c.mu.Unlock()
	return nil
}

// NotificationID names a notification: the same for every attempt of every agent, so that a
// receiver can drop a duplicate.
func NotificationID(uid types.UID, f notify.Fired, to notify.Destination) string {
	h := sha256.Sum256([]byte(strings.Join([]string{string(uid), f.Trigger.Name, f.Occurrence, to.String()}, "\n")))
	return hex.EncodeToString(h[:12])
}
