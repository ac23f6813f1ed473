package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	cpv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cplisters "sigs.k8s.io/cluster-inventory-api/client/listers/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// MemberSelector selects the subset workloads the agent put in members: ours (managed-by) and a
// UnitedDeployment's. A member's informers list and watch only those.
var MemberSelector = labels.Set{appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent}.AsSelector().String() +
	"," + appsv1alpha1.LabelUnitedDeploymentName

// Clients are a member's API clients.
type Clients struct {
	Kube      kubeclient.Interface
	Workloads versioned.Interface
}

// Options configure a Registry.
type Options struct {
	// Access is the provider file's configuration; nil when the agent runs without
	// --clusterprofile-provider-file (every member is then refused with ErrNoProviderFile).
	Access *access.Config
	// Profiles reads the hub's ClusterProfiles; nil when the hub serves none.
	Profiles cplisters.ClusterProfileLister
	// Namespace scopes the members' informers ("" is every namespace), as --namespace scopes
	// the hub's.
	Namespace string
	// UserAgent, QPS and Burst are those of the agent's own clients.
	UserAgent string
	QPS       float32
	Burst     int
	// Fence wraps every member transport: the agent's write fence (fence.Transport), so that
	// a frozen ex-leader writes to no member either.
	Fence transport.WrapperFunc
	// Resync is the members' informers' resync period; Transform their cache transform.
	Resync    time.Duration
	Transform cache.TransformFunc
	// NewClients builds a member's clients from its configuration; nil: the real ones
	// (protobuf for native kinds).
	NewClients func(*rest.Config) (Clients, error)
}

// ErrNoProviderFile refuses a member while the agent runs without --clusterprofile-provider-file.
var ErrNoProviderFile = errors.New("the agent runs without --clusterprofile-provider-file, so it cannot reach member clusters")

// Registry holds the members built so far, one per ClusterProfile.
type Registry struct {
	opts Options

	mu       sync.Mutex
	ctx      context.Context
	members  map[string]*Member
	profile  []func(namespace, name string)
	workload []func(namespace, name string, e Event)
}

// New returns a registry over opts. profiles, the hub's ClusterProfile informer, may be nil
// (the hub serves none); its events drop members whose access changed or whose profile went,
// and are passed on to the OnProfile handlers.
func New(opts Options, profiles cache.SharedIndexInformer) (*Registry, error) {
	if opts.NewClients == nil {
		opts.NewClients = newClients
	}
	r := &Registry{opts: opts, members: map[string]*Member{}}
	if profiles == nil {
		return r, nil
	}
	_, err := profiles.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: r.profileChanged,
		UpdateFunc: func(old, cur any) {
			r.profileChanged(cur)
			if o, ok := old.(*cpv1alpha1.ClusterProfile); ok {
				if c, ok := cur.(*cpv1alpha1.ClusterProfile); ok && o.ResourceVersion != c.ResourceVersion {
					r.profileUpdated(c)
				}
			}
		},
		DeleteFunc: r.profileChanged,
	})
	return r, err
}

// OnProfile registers a handler called with a ClusterProfile's namespace and name whenever it
// changes or goes, and whenever its member stops or starts answering the agent's requests.
func (r *Registry) OnProfile(h func(namespace, name string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.profile = append(r.profile, h)
}

// OnWorkload registers a handler called with the namespace and UnitedDeployment label of every
// event of a member's subset workload, and what happened (creations and deletions are the
// controller's expectations).
func (r *Registry) OnWorkload(h func(namespace, udName string, e Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workload = append(r.workload, h)
}

// Start lets members be built: their informers run until ctx is done.
func (r *Registry) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctx = ctx
}

// HasAccess reports whether the agent can reach members at all: it runs with a provider file.
func (r *Registry) HasAccess() bool { return r != nil && r.opts.Access != nil }

// Key is a ClusterProfile reference's namespace/name, as status.subsetStatuses[].cluster names it.
func Key(ref appsv1alpha1.ClusterProfileReference) string {
	return ref.Namespace + "/" + ref.Name
}

// Member returns the member ref names, building it on first use or after its profile's access
// providers changed. The error says, without any credential, why the member cannot be reached.
func (r *Registry) Member(ref appsv1alpha1.ClusterProfileReference) (*Member, error) {
	key := Key(ref)
	if r.opts.Access == nil {
		return nil, ErrNoProviderFile
	}
	if r.opts.Profiles == nil {
		return nil, fmt.Errorf("the hub serves no clusterprofiles.%s: no ClusterProfile %s", cpv1alpha1.Group, key)
	}
	cp, err := r.opts.Profiles.ClusterProfiles(ref.Namespace).Get(ref.Name)
	if err != nil {
		r.drop(key)
		return nil, fmt.Errorf("ClusterProfile %s: %s", key, Redact(err.Error()))
	}
	fp := fingerprint(cp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return nil, fmt.Errorf("member %s: the registry is not started", key)
	}
	if m := r.members[key]; m != nil {
		if m.fingerprint == fp {
			return m, nil
		}
		m.stop()
		delete(r.members, key)
	}
	m, err := r.build(key, cp, fp)
	if err != nil {
		return nil, err
	}
	r.members[key] = m
	return m, nil
}

// Profile returns the ClusterProfile ref names, from the cache; nil when it is not there.
func (r *Registry) Profile(ref appsv1alpha1.ClusterProfileReference) *cpv1alpha1.ClusterProfile {
	if r.opts.Profiles == nil {
		return nil
	}
	cp, err := r.opts.Profiles.ClusterProfiles(ref.Namespace).Get(ref.Name)
	if err != nil {
		return nil
	}
	return cp
}

// ControlPlaneHealthy reports the profile's ControlPlaneHealthy condition: healthy unless the
// cluster manager says otherwise (a profile without the condition is given the benefit of the
// doubt; the member's own answers decide then), and why not.
func ControlPlaneHealthy(cp *cpv1alpha1.ClusterProfile) (bool, string) {
	c := meta.FindStatusCondition(cp.Status.Conditions, cpv1alpha1.ClusterConditionControlPlaneHealthy)
	if c == nil || c.Status == metav1.ConditionTrue {
		return true, ""
	}
	msg := fmt.Sprintf("ClusterProfile %s/%s: %s is %s", cp.Namespace, cp.Name, c.Type, c.Status)
	if c.Reason != "" {
		msg += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		msg += ": " + Redact(c.Message)
	}
	return false, msg
}

// build makes a member's clients and starts its informers; r.mu is held.
func (r *Registry) build(key string, cp *cpv1alpha1.ClusterProfile, fp string) (*Member, error) {
	cfg, err := copyAccess(r.opts.Access).BuildConfigFromCP(cp)
	if err != nil {
		return nil, fmt.Errorf("ClusterProfile %s: %s", key, Redact(err.Error()))
	}
	cfg.UserAgent, cfg.QPS, cfg.Burst = r.opts.UserAgent, r.opts.QPS, r.opts.Burst
	var m *Member
	h := &health{}
	h.changed = func() {
		if ok, _ := h.get(); ok {
			r.caughtOut(key, m)
		}
		r.notifyProfile(cp.Namespace, cp.Name)
	}
	cfg.Wrap(h.wrap)
	if r.opts.Fence != nil {
		// Outermost: a write the fence refuses never reaches the member nor counts against it.
		cfg.Wrap(r.opts.Fence)
	}
	clients, err := r.opts.NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("ClusterProfile %s: clients: %s", key, Redact(err.Error()))
	}
	ctx, cancel := context.WithCancel(r.ctx)
	m = newMember(key, clients, h, fp, cancel)
	if err := m.watch(ctx, r.opts, r.notifyWorkload); err != nil {
		cancel()
		return nil, err
	}
	return m, nil
}

func (r *Registry) drop(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.members[key]; m != nil {
		m.stop()
		delete(r.members, key)
	}
}

// caughtOut drops member m, back from an outage, so that its next use builds it anew. Its
// informers' caches are as old as the outage: a reflector whose watch is refused retries the
// watch, not a list, with a backoff that has grown to 30-60 s after half a minute down, so for
// up to a minute after the member answers again its caches would miss every change made there
// meanwhile (the member's controllers update its workloads' status), and each write from them
// would be refused with a conflict. A member built anew lists at once, and the controller waits
// for that list (HasSynced) before it writes.
func (r *Registry) caughtOut(key string, m *Member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m != nil && r.members[key] == m {
		m.stop()
		delete(r.members, key)
	}
}

func (r *Registry) notifyWorkload(namespace, name string, e Event) {
	r.mu.Lock()
	hs := r.workload
	r.mu.Unlock()
	for _, h := range hs {
		h(namespace, name, e)
	}
}

// profileChanged drops a member whose profile went or whose access providers changed (it is
// rebuilt on next use), and tells the handlers.
func (r *Registry) profileChanged(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cp, ok := obj.(*cpv1alpha1.ClusterProfile)
	if !ok {
		return
	}
	key := cp.Namespace + "/" + cp.Name
	r.mu.Lock()
	m := r.members[key]
	r.mu.Unlock()
	if m != nil {
		if live := r.Profile(appsv1alpha1.ClusterProfileReference{Namespace: cp.Namespace, Name: cp.Name}); live == nil || fingerprint(live) != m.fingerprint {
			r.drop(key)
		}
	}
	r.notifyProfile(cp.Namespace, cp.Name)
}

// profileUpdated makes the member of a changed ClusterProfile (not a resync's) ask again
// whether it serves TApps.
func (r *Registry) profileUpdated(cp *cpv1alpha1.ClusterProfile) {
	r.mu.Lock()
	m := r.members[cp.Namespace+"/"+cp.Name]
	r.mu.Unlock()
	if m != nil {
		m.forgetRefusal()
	}
}

// notifyProfile tells the OnProfile handlers that a member's state may have changed: its
// profile, or whether it answers.
func (r *Registry) notifyProfile(namespace, name string) {
	r.mu.Lock()
	hs := r.profile
	r.mu.Unlock()
	for _, h := range hs {
		h(namespace, name)
	}
}

// fingerprint identifies a profile's access: a member is rebuilt when it changes.
func fingerprint(cp *cpv1alpha1.ClusterProfile) string {
	b, err := json.Marshal([]any{cp.UID, cp.Status.AccessProviders, cp.Status.CredentialProviders})
	if err != nil {
		return string(cp.UID)
	}
	return string(b)
}

// copyAccess copies the provider configuration: BuildConfigFromCP appends a profile's
// additional arguments to the provider's own exec configuration, which would otherwise grow
// with every member built.
func copyAccess(c *access.Config) *access.Config {
	out := &access.Config{Providers: make([]access.Provider, len(c.Providers))}
	for i, p := range c.Providers {
		out.Providers[i] = p
		if p.ExecConfig != nil {
			out.Providers[i].ExecConfig = p.ExecConfig.DeepCopy()
		}
	}
	return out
}

// newClients builds a member's real clients: protobuf for native kinds, JSON for ours.
func newClients(cfg *rest.Config) (Clients, error) {
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kubeCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubeclient.New(kubeCfg)
	if err != nil {
		return Clients{}, err
	}
	w, err := versioned.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: kube, Workloads: w}, nil
}
