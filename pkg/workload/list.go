package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Listable lists the kinds `list` tabulates: our custom resources.
var Listable = kindsWith[Lister]()

// Replicas are the counts a table shows for a workload.
type Replicas struct {
	// Desired is the number of pods (or instances) asked for; Ready how many are ready (for a
	// Canary: available across stable and canary); Updated how many run the new template (for a
	// Canary: the canary Deployment's replicas).
	Desired, Ready, Updated int32
}

// ReplicasOf reads a workload's counts.
func ReplicasOf(k Kind, obj *unstructured.Unstructured) (Replicas, error) {
	l, ok := k.helper.(Lister)
	if !ok {
		return Replicas{}, fmt.Errorf("no replica counts for a %s", k.Name)
	}
	return l.Replicas(obj)
}
