package kubeinformers

import (
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// HTTPRouteInformer is a shared informer and lister of gateway.networking.k8s.io/v1 HTTPRoutes.
type HTTPRouteInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() gatewaylisters.HTTPRouteLister
}

// HTTPRoutes is the factory's HTTPRoute informer, listing through client: the Gateway API's v1
// client alone, not its clientset of five API versions (docs/architecture.md, "A lean agent
// binary"). The first call's client builds the shared informer. The reflector asks client, as
// the generated informers ask their clientset, whether it serves watch-list requests: a fake
// clientset says it does not, its typed v1 client does not say, so a test hands in a v1 client
// that says so (factory_test.go, fakeV1) or its informer never syncs.
func (f *Factory) HTTPRoutes(client gatewayclient.GatewayV1Interface) HTTPRouteInformer {
	return kind[gatewaylisters.HTTPRouteLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &gatewayv1.HTTPRoute{}, client, func(ns string) lister[*gatewayv1.HTTPRouteList] {
			return client.HTTPRoutes(ns)
		})
	}, gatewaylisters.NewHTTPRouteLister}
}
