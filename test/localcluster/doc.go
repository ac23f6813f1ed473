// Package localcluster runs a real Kubernetes control plane on loopback for
// end-to-end tests, benchmarks and local use.
//
// A cluster is etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler built from source (see hack/cluster/build-bins.sh), plus kwok
// playing the kubelet of fake nodes spread over three zones, and a loop in the
// process that started the cluster doing the kubelet's final delete of a
// terminating pod (a grace period of 0 and a UID precondition, which kwok's
// delete lacks; see podFinisher). Controllers run against it unchanged: pods
// are scheduled, become Ready, are updated in place and are deleted like on a
// real cluster, but no container ever runs.
//
// Every process listens on 127.0.0.1 only, and Stop removes every process and
// file the cluster made, keeping the component logs when asked to.
//
// Tests use one cluster per package through RunTestMain; people use the
// localcluster command (make cluster-up / cluster-down).
package localcluster
