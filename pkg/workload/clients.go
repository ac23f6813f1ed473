package workload

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeClientGetter is implemented by a factory that supplies its own clientset for native
// objects; tests' factories do, to hand out a fake one. KubeClient uses it when present.
type KubeClientGetter interface {
	KubeClient() (kubernetes.Interface, error)
}

// RESTConfigGetter is the part of kubectl's factory KubeClient needs.
type RESTConfigGetter interface {
	ToRESTConfig() (*rest.Config, error)
}

// KubeClient returns a typed clientset for native objects (pods, ReplicaSets, Deployments,
// StatefulSets) that speaks protobuf: reading a thousand pods as protobuf into typed objects
// takes a fraction of reading them as JSON through the dynamic client and converting them
// (bench/RESULTS.md). Our custom resources have no protobuf encoding; they stay on the dynamic
// client.
func KubeClient(f RESTConfigGetter) (kubernetes.Interface, error) {
	if g, ok := f.(KubeClientGetter); ok {
		return g.KubeClient()
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(ProtobufConfig(cfg))
}

// ProtobufConfig is a copy of cfg that sends and asks for protobuf (JSON still accepted).
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}
