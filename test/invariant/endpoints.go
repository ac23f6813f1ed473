package invariant

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// OneVersion watches the EndpointSlices the control plane computes for a Service: at no time may
// the Service's endpoints belong to more than one of versions (the Deployments whose pods a
// blue-green release switches between, told apart by their pod names). Every state of every
// slice is checked, and the slices together.
func OneVersion(ctx context.Context, kube kubernetes.Interface, ns, service string, versions ...string) *Watcher {
	return oneVersion(ctx, kube, ns, service, func(_ context.Context, pod string) string { return VersionOf(pod, versions) })
}

// OneTemplate is OneVersion with the version of a pod read from the pod itself by versionOf
// (its image, a label of its template), not from its name: two Deployments may run the same
// version, as the temporary Deployment of a Deployment target and the Deployment itself after
// the hand-over. Each pod is read once, when its endpoint is first seen; one that is gone by
// then counts as a version of its own ("pod NAME not found").
func OneTemplate(ctx context.Context, kube kubernetes.Interface, ns, service string, versionOf func(*corev1.Pod) string) *Watcher {
	known := map[string]string{} // only used under the watcher's lock, by its check
	return oneVersion(ctx, kube, ns, service, func(ctx context.Context, name string) string {
		if v, ok := known[name]; ok {
			return v
		}
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("pod %s not found", name)
		case err != nil:
			return fmt.Sprintf("pod %s unread: %v", name, err) // not memoized: read again next time
		}
		known[name] = versionOf(p)
		return known[name]
	})
}

// oneVersion is OneVersion with the version of a pod given by its name.
func oneVersion(ctx context.Context, kube kubernetes.Interface, ns, service string, versionOf func(ctx context.Context, pod string) string) *Watcher {
	selector := discoveryv1.LabelServiceName + "=" + service
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return kube.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return kube.DiscoveryV1().EndpointSlices(ns).Watch(ctx, o)
		},
	}
	seen := func(store cache.Store) map[string]int {
		out := map[string]int{}
		for _, o := range store.List() {
			for _, ep := range o.(*discoveryv1.EndpointSlice).Endpoints {
				if ep.TargetRef != nil {
					out[versionOf(ctx, ep.TargetRef.Name)]++
				}
			}
		}
		return out
	}
	w := &Watcher{
		score: func(store cache.Store) int { return len(seen(store)) },
		check: func(store cache.Store) ([]string, string) {
			s := seen(store)
			desc := describeVersions(s)
			if len(s) > 1 {
				return []string{fmt.Sprintf("Service %s/%s selects pods of %d versions: %s", ns, service, len(s), desc)}, desc
			}
			return nil, desc
		},
	}
	return start(ctx, kube, lw, &discoveryv1.EndpointSlice{}, w)
}

// VersionOf is the one of versions (Deployment names) whose pods are named like pod: the longest
// that prefixes it with a dash ("" for none).
func VersionOf(pod string, versions []string) string {
	best := ""
	for _, v := range versions {
		if strings.HasPrefix(pod, v+"-") && len(v) > len(best) {
			best = v
		}
	}
	return best
}

func describeVersions(s map[string]int) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q: %d endpoints", k, s[k]))
	}
	if len(parts) == 0 {
		return "no endpoints"
	}
	return strings.Join(slices.Clip(parts), ", ")
}
