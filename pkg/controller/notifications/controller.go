// Package notifications is the agent's notifications controller: it watches Canaries through
// the shared informer, derives from each the release events that fire (pkg/notify's triggers,
// read from status, conditions and spec as the canary controller writes them), and delivers
// each to the destinations its Canary and namespace subscribe, once (docs/notifications.md).
//
// It writes nothing the canary controller writes: what it sent goes into the Canary's
// annotation notify.AnnotationSent (a merge patch of that one key), and a failing delivery
// into the Canary's condition NotificationsDelivered, applied server-side as the only field it
// owns in status. A failing delivery is retried with backoff and never holds the release.
package notifications

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	informers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
)

// ControllerName names the controller in --controllers, logs, metrics and Events.
const ControllerName = "notifications"

// FieldManager is the manager of the condition it applies to a Canary's status.
const FieldManager = "workload-notifications"

// Backoff bounds of a failing delivery's retries.
const (
	retryBase = time.Second
	retryMax  = 5 * time.Minute
	// sendTimeout bounds one HTTP request.
	sendTimeout = 15 * time.Second
)

// Fence is the agent's write fence, as the controller uses it: a check before every send, and a
// transport that refuses and cancels a send once the fence closes (pkg/agent/fence).
type Fence interface {
	Check() error
	Transport(http.RoundTripper) http.RoundTripper
}

// Controller delivers the notifications of Canaries.
type Controller struct {
	*base.Base

	kube      kubeclient.Interface
	client    versioned.Interface
	canaries  listers.CanaryLister
	namespace string
	http      *http.Client
	fence     Fence
	clock     clock.Clock

	mu    sync.Mutex
	state map[string]*canaryState
}

// canaryState is what the controller remembers of one Canary between syncs.
type canaryState struct {
	// sent is this process's record of deliveries: the cache may not show its last patch yet.
	sent notify.Sent
	// unrecorded: sent holds a delivery the Canary's annotation does not show yet.
	unrecorded bool
	// handled maps a trigger to the occurrence fully handled (delivered everywhere, or with
	// no subscription), so that a resync does not read the namespace again. It is dropped
	// when the Canary's subscriptions change.
	handled       map[string]string
	subscriptions string
	// attempts counts the failed attempts in a row; failing is the message of the condition
	// last written (empty: none is False).
	attempts int
	failing  string
	// retryAt is when the next attempt is due: syncs before it (the Canary changes during a
	// release) send nothing, so that a failing receiver is retried at the backoff's pace.
	retryAt time.Time
	// reported is the last subscription error sent as an Event.
	reported string
}

// NewController returns the controller. namespace is the agent's (the ConfigMap and Secret);
// fence may be nil (always open, as without leader election).
func NewController(kube kubeclient.Interface, client versioned.Interface, canaries informers.CanaryInformer,
	recorder record.EventRecorder, namespace string, fence Fence) (*Controller, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = transport
	if fence != nil {
		rt = fence.Transport(rt)
	}
	c := &Controller{
		Base:      base.New(ControllerName, "Canary", recorder),
		kube:      kube,
		client:    client,
		canaries:  canaries.Lister(),
		namespace: namespace,
		http:      &http.Client{Transport: rt, Timeout: sendTimeout, CheckRedirect: noRedirect},
		fence:     fence,
		clock:     clock.RealClock{},
		state:     map[string]*canaryState{},
	}
	if err := c.Watch(canaries.Informer(), c.ObjectHandler()); err != nil {
		return nil, err
	}
	return c, nil
}

// noRedirect keeps a receiver from sending a notification (and its headers) elsewhere.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Run implements ctrl.Controller.
func (c *Controller) Run(ctx context.Context, workers int) { c.Base.Run(ctx, workers, c.sync) }

// sync delivers what fires on the Canary key and was not delivered yet.
func (c *Controller) sync(ctx context.Context, key base.Key) error {
	cached, err := c.canaries.Canaries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.state, key.String())
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	st := c.stateOf(key.String(), cached.Annotations)
	if err := c.record(ctx, cached, st); err != nil {
		return err
	}
	fired := notify.Fire(cached)
	pending := fired[:0:0]
	for _, f := range fired {
		if st.handled[f.Trigger.Name] != f.Occurrence {
			pending = append(pending, f)
		}
	}
	if len(pending) == 0 {
		// A failing notification whose event is over (a pause promoted meanwhile) is not
		// sent late: the condition stops saying it fails.
		c.mu.Lock()
		failing := st.failing != ""
		c.mu.Unlock()
		if failing {
			return c.settled(ctx, cached, st)
		}
		return nil
	}
	d, err := c.deliveries(ctx, cached, st, pending)
	if err != nil {
		return err
	}
	return c.deliver(ctx, cached, st, d)
}

// stateOf returns the Canary's state, its handled occurrences forgotten when its subscriptions
// changed.
func (c *Controller) stateOf(key string, annotations map[string]string) *canaryState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.state[key]
	if !ok {
		st = &canaryState{sent: notify.Sent{}, handled: map[string]string{}}
		c.state[key] = st
	}
	subs := subscriptionKey(annotations)
	if subs != st.subscriptions {
		st.subscriptions, st.handled = subs, map[string]string{}
	}
	return st
}

// errFenced ends a sync whose agent lost the right to write: the next leader delivers.
var errFenced = errors.New("not delivering: this agent may no longer hold the leader Lease")

func (c *Controller) checkFence() error {
	if c.fence == nil {
		return nil
	}
	if err := c.fence.Check(); err != nil {
		return fmt.Errorf("%w: %v", errFenced, err)
	}
	return nil
}

// backoff is the wait before attempt n+1 after n failed attempts.
func backoff(n int) time.Duration {
	d := retryBase
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// subscriptionKey sums up a Canary's subscription annotations, to notice when they change.
func subscriptionKey(annotations map[string]string) string {
	var keys []string
	for k, v := range annotations {
		if strings.HasPrefix(k, notify.SubscribePrefix) {
			keys = append(keys, k+"="+v)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}
