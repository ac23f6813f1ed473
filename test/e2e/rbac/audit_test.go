package rbac

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestObject *struct {
		Metadata struct {
			OwnerReferences []struct {
				APIVersion         string `json:"apiVersion"`
				Kind               string `json:"kind"`
				BlockOwnerDeletion *bool  `json:"blockOwnerDeletion"`
			} `json:"ownerReferences"`
		} `json:"metadata"`
	} `json:"requestObject"`
}

// request is one API request of the agent, as the audit log saw it.
type request struct {
	verb, group, resource, namespace, name, uri string
	code                                        int
	message                                     string
	// finalizers are the */finalizers permissions admission checked for this request.
	finalizers []agentrbac.Key
}

func (r request) String() string {
	return fmt.Sprintf("%s %s (%d %s)", r.verb, r.uri, r.code, r.message)
}

// ownerResources maps the kinds the agent's objects may have a blocking owner reference to onto
// their resources. An owner of another kind fails the test: the list of permissions would have
// to say which */finalizers it needs.
var ownerResources = map[schema.GroupKind]string{
	{Group: "apps.workload.dev", Kind: "TApp"}:             "tapps",
	{Group: "apps.workload.dev", Kind: "UnitedDeployment"}: "uniteddeployments",
	{Group: "apps.workload.dev", Kind: "Canary"}:           "canaries",
}

// readAudit returns the agent's resource requests from the audit log, one per audit ID (its
// last stage), and its non-resource requests (discovery, /version) by URI.
func readAudit(path string) ([]request, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	byID := map[string]request{}
	var order []string
	nonResource := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if ev.User.Username != agentUser {
			continue
		}
		if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
			if ev.Stage == "ResponseComplete" {
				nonResource[strings.SplitN(ev.RequestURI, "?", 2)[0]]++
			}
			continue
		}
		r := request{
			verb: ev.Verb, group: ev.ObjectRef.APIGroup, resource: ev.ObjectRef.Resource,
			namespace: ev.ObjectRef.Namespace, name: ev.ObjectRef.Name, uri: ev.RequestURI,
		}
		if ev.ObjectRef.Subresource != "" {
			r.resource += "/" + ev.ObjectRef.Subresource
		}
		if ev.ResponseStatus != nil {
			r.code, r.message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
		}
		if ev.RequestObject != nil && ev.Verb == "create" {
			for _, ref := range ev.RequestObject.Metadata.OwnerReferences {
				if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
					continue
				}
				gv, err := schema.ParseGroupVersion(ref.APIVersion)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: owner reference %q: %w", r, ref.APIVersion, err)
				}
				res, ok := ownerResources[gv.WithKind(ref.Kind).GroupKind()]
				if !ok {
					return nil, nil, fmt.Errorf("%s has a blocking owner reference to a %s, which the test does not know", r, ref.Kind)
				}
				r.finalizers = append(r.finalizers, agentrbac.Key{Group: gv.Group, Resource: res + "/finalizers", Verb: "update"})
			}
		}
		if _, seen := byID[ev.AuditID]; !seen {
			order = append(order, ev.AuditID)
		}
		byID[ev.AuditID] = r
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	out := make([]request, 0, len(order))
	for _, id := range order {
		out = append(out, byID[id])
	}
	return out, nonResource, nil
}

// keyOf is the permission a request used: granted by a Role when config/agent.Permissions has a
// namespaced entry for it in the request's namespace, else cluster-wide.
func keyOf(r request) agentrbac.Key {
	k := agentrbac.Key{Group: r.group, Resource: r.resource, Verb: r.verb}
	if r.namespace != "" {
		ns := k
		ns.Namespace = r.namespace
		for _, p := range agentrbac.Permissions {
			if p.Key() == ns {
				return ns
			}
		}
	}
	return k
}

// usage is what the agent used: each permission with the number of requests, and how many of
// them were namespaced and cluster-wide (all namespaces, or a cluster-scoped resource).
type usage struct {
	requests, namespaced, clusterWide int
	example                           string
}

func usedPermissions(reqs []request) map[agentrbac.Key]*usage {
	used := map[agentrbac.Key]*usage{}
	note := func(k agentrbac.Key, r request, namespaced bool) {
		u := used[k]
		if u == nil {
			u = &usage{example: r.uri}
			used[k] = u
		}
		u.requests++
		if namespaced {
			u.namespaced++
		} else {
			u.clusterWide++
		}
	}
	for _, r := range reqs {
		note(keyOf(r), r, r.namespace != "")
		for _, k := range r.finalizers {
			note(k, r, r.namespace != "")
		}
	}
	return used
}

func sortedKeys[V any](m map[agentrbac.Key]V) []agentrbac.Key {
	keys := make([]agentrbac.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
