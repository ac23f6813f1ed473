package fault

import (
	"fmt"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// tappManifest is a TApp of n instances updated at most maxUnavailable at a time, each ready
// minReady seconds before it counts as available (so that a rollout takes a while).
func tappManifest(name string, n, maxUnavailable, minReady int, image string) string {
	return fmt.Sprintf(`apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  minReadySeconds: %[4]d
  updateStrategy: {maxUnavailable: %[3]d}
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: %[5]q}]
`, name, n, maxUnavailable, minReady, image)
}

// tappSelector selects a TApp's pods.
func tappSelector(name string) string { return v1alpha1.LabelTAppName + "=" + name }

// udManifest is a UnitedDeployment of n pods over three zones, its subsets Deployments.
func udManifest(name string, n int, image string) string {
	return fmt.Sprintf(`apiVersion: apps.workload.dev/v1alpha1
kind: UnitedDeployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  topology:
    subsets:
    - {name: zone-a, nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}}
    - {name: zone-b, nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]}}
    - {name: zone-c, nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-c]}]}}
  template:
    deploymentTemplate:
      spec:
        minReadySeconds: 2
        selector: {matchLabels: {app: %[1]s}}
        template:
          metadata: {labels: {app: %[1]s}}
          spec:
            terminationGracePeriodSeconds: 1
            containers: [{name: main, image: %[3]q}]
`, name, n, image)
}

// stableManifest is the Deployment a Canary releases from.
func stableManifest(name string, n int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s, track: stable}}
  template:
    metadata: {labels: {app: %[1]s, track: stable}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: registry.invalid/app:v1}]
`, name, n)
}

// canaryManifest releases registry.invalid/app:v2 over the stable Deployment in batches, without
// pauses.
func canaryManifest(name, stable, canary string, n, batches int) string {
	return fmt.Sprintf(`apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: %[1]s}
spec:
  replicas: %[4]d
  batches: %[5]d
  pauseType: None
  minReadySeconds: 2
  stableRef: {name: %[2]s}
  canary:
    name: %[3]s
    template:
      metadata: {labels: {app: %[2]s, track: canary}}
      spec:
        terminationGracePeriodSeconds: 1
        containers: [{name: main, image: registry.invalid/app:v2}]
`, name, stable, canary, n, batches)
}
