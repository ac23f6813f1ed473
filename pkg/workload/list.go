package workload

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Listable lists the kinds `list` tabulates: our custom resources.
var Listable = []Kind{TApp, UnitedDeployment, Canary}

// Replicas are the counts a table shows for a workload.
type Replicas struct {
	// Desired is the number of pods (or instances) asked for; Ready how many are ready (for a
	// Canary: available across stable and canary); Updated how many run the new template (for a
	// Canary: the canary Deployment's replicas).
	Desired, Ready, Updated int32
}

// ReplicasOf reads a workload's counts.
func ReplicasOf(k Kind, obj *unstructured.Unstructured) (Replicas, error) {
	switch k.Name {
	case TApp.Name:
		var t v1alpha1.TApp
		if err := fromUnstructured(obj, &t); err != nil {
			return Replicas{}, err
		}
		replicas := v1alpha1.ReplicasOrDefault(t.Spec.Replicas)
		wanted := replicas
		for id := int32(0); id < replicas; id++ {
			if t.Spec.Statuses[strconv.Itoa(int(id))] == v1alpha1.InstanceKilled {
				wanted--
			}
		}
		return Replicas{wanted, t.Status.ReadyReplicas, t.Status.UpdatedReplicas}, nil
	case UnitedDeployment.Name:
		var ud v1alpha1.UnitedDeployment
		if err := fromUnstructured(obj, &ud); err != nil {
			return Replicas{}, err
		}
		return Replicas{v1alpha1.ReplicasOrDefault(ud.Spec.Replicas), ud.Status.ReadyReplicas, ud.Status.UpdatedReplicas}, nil
	case Canary.Name:
		var c v1alpha1.Canary
		if err := fromUnstructured(obj, &c); err != nil {
			return Replicas{}, err
		}
		return Replicas{c.Spec.Replicas, c.Status.CanaryAvailable + c.Status.StableAvailable, c.Status.CanaryReplicas}, nil
	}
	return Replicas{}, fmt.Errorf("no replica counts for a %s", k.Name)
}
