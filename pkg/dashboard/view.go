package dashboard

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Row is one line of the list page: a workload of our kinds, or a native workload a Canary
// releases.
type Row struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Summary   string `json:"summary"`
	// ReleasedBy names the Canary that releases a native workload ("" for our kinds).
	ReleasedBy string `json:"releasedBy,omitempty"`
}

// ListPage is what the list page shows.
type ListPage struct {
	Scope    string   `json:"scope"`
	ReadOnly bool     `json:"readOnly"`
	Rows     []Row    `json:"rows"`
	Errors   []string `json:"errors"`
}

// ourKinds are the kinds listed whether or not a Canary releases them.
var ourKinds = []workload.Kind{workload.TApp, workload.UnitedDeployment, workload.Canary}

// BuildList reads the list page from the hub's caches.
func BuildList(h *Hub, scope string, readOnly bool) ListPage {
	page := ListPage{Scope: scope, ReadOnly: readOnly, Rows: []Row{}, Errors: h.Errors()}
	for _, k := range ourKinds {
		for _, obj := range h.List(k.Resource) {
			page.Rows = append(page.Rows, row(k, obj, ""))
			if k.Name != workload.Canary.Name {
				continue
			}
			c, err := workload.AsCanary(obj)
			if err != nil {
				continue
			}
			for _, t := range releasedNative(c) {
				if tobj := h.Get(t.Kind.Resource, c.Namespace, t.Name); tobj != nil {
					page.Rows = append(page.Rows, row(t.Kind, tobj, c.Name))
				}
			}
		}
	}
	return page
}

func row(k workload.Kind, obj *unstructured.Unstructured, releasedBy string) Row {
	r := Row{Kind: k.Short, Namespace: obj.GetNamespace(), Name: obj.GetName(), ReleasedBy: releasedBy}
	st, err := workload.RolloutStatusOf(k, obj)
	if err != nil {
		r.Phase, r.Summary = "Unknown", err.Error()
		return r
	}
	r.Phase, r.Summary = st.Phase, st.Summary
	return r
}

// releasedNative lists the Deployments, StatefulSets and DaemonSets a Canary releases: its
// target, or its stable and canary Deployments.
func releasedNative(c *v1alpha1.Canary) []workload.Ref {
	if t := c.Spec.TargetRef; t != nil {
		k, ok := workload.KindFor(t.Kind)
		if !ok || k.Ours() {
			return nil
		}
		return []workload.Ref{{Kind: k, Name: t.Name}}
	}
	var out []workload.Ref
	for _, name := range []string{c.Spec.StableRef.Name, c.Spec.Canary.Name} {
		if name != "" {
			out = append(out, workload.Ref{Kind: workload.Deployment, Name: name})
		}
	}
	return out
}
