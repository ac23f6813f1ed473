package localcluster

import (
	_ "embed"
	"fmt"
	"strconv"
)

// stagesYAML are the kwok stages that play the kubelet; see the comments in
// stages.yaml.
//
//go:embed stages.yaml
var stagesYAML []byte

// kwokConfigYAML is kwok's --config: its options, then the stages.
func kwokConfigYAML() []byte {
	options := `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  # Only the harness's nodes, so kwok never touches another node.
  manageAllNodes: false
  manageNodesWithAnnotationSelector: ` + kwokNodeAnnotation + `=fake
  # No nodePort and no serverAddress: kwok serves nothing (no kubelet API,
  # no metrics), so it opens no listening socket at all.
  nodeIP: 10.127.0.1
  cidr: 10.127.0.0/16
  # Pods are played by a few workers; thousands of pods at once need more.
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 4
---
`
	return append([]byte(options), stagesYAML...)
}

// schedulerConfig is kube-scheduler's --config. Client settings must be here:
// with --config the scheduler ignores --kubeconfig and --kube-api-qps.
func schedulerConfig(kubeconfig string, qps float32, burst int) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %s
  burst: %d
leaderElection:
  leaderElect: false
`, strconv.Quote(kubeconfig), strconv.FormatFloat(float64(qps), 'f', -1, 32), burst)
}
