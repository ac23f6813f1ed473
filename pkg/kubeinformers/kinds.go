package kubeinformers

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodInformer is a shared informer and lister of Pods.
type PodInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() corelisters.PodLister
}

// PersistentVolumeClaimInformer is a shared informer and lister of PersistentVolumeClaims.
type PersistentVolumeClaimInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() corelisters.PersistentVolumeClaimLister
}

// ControllerRevisionInformer is a shared informer and lister of ControllerRevisions.
type ControllerRevisionInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() appslisters.ControllerRevisionLister
}

// DeploymentInformer is a shared informer and lister of Deployments.
type DeploymentInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() appslisters.DeploymentLister
}

// StatefulSetInformer is a shared informer and lister of StatefulSets.
type StatefulSetInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() appslisters.StatefulSetLister
}

// HorizontalPodAutoscalerInformer is a shared informer and lister of autoscaling/v2
// HorizontalPodAutoscalers.
type HorizontalPodAutoscalerInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() autoscalinglisters.HorizontalPodAutoscalerLister
}

// kind is one kind's informer and lister of a factory; the informer is built on first use.
type kind[L any] struct {
	informer  func() cache.SharedIndexInformer
	newLister func(cache.Indexer) L
}

func (k kind[L]) Informer() cache.SharedIndexInformer { return k.informer() }
func (k kind[L]) Lister() L                           { return k.newLister(k.informer().GetIndexer()) }

// Pods is the factory's Pod informer.
func (f *Factory) Pods() PodInformer {
	return kind[corelisters.PodLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &corev1.Pod{}, f.client, func(ns string) lister[*corev1.PodList] { return f.client.CoreV1().Pods(ns) })
	}, corelisters.NewPodLister}
}

// PersistentVolumeClaims is the factory's PersistentVolumeClaim informer.
func (f *Factory) PersistentVolumeClaims() PersistentVolumeClaimInformer {
	return kind[corelisters.PersistentVolumeClaimLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &corev1.PersistentVolumeClaim{}, f.client, func(ns string) lister[*corev1.PersistentVolumeClaimList] {
			return f.client.CoreV1().PersistentVolumeClaims(ns)
		})
	}, corelisters.NewPersistentVolumeClaimLister}
}

// ControllerRevisions is the factory's ControllerRevision informer.
func (f *Factory) ControllerRevisions() ControllerRevisionInformer {
	return kind[appslisters.ControllerRevisionLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &appsv1.ControllerRevision{}, f.client, func(ns string) lister[*appsv1.ControllerRevisionList] {
			return f.client.AppsV1().ControllerRevisions(ns)
		})
	}, appslisters.NewControllerRevisionLister}
}

// Deployments is the factory's Deployment informer.
func (f *Factory) Deployments() DeploymentInformer {
	return kind[appslisters.DeploymentLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &appsv1.Deployment{}, f.client, func(ns string) lister[*appsv1.DeploymentList] {
			return f.client.AppsV1().Deployments(ns)
		})
	}, appslisters.NewDeploymentLister}
}

// StatefulSets is the factory's StatefulSet informer.
func (f *Factory) StatefulSets() StatefulSetInformer {
	return kind[appslisters.StatefulSetLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &appsv1.StatefulSet{}, f.client, func(ns string) lister[*appsv1.StatefulSetList] {
			return f.client.AppsV1().StatefulSets(ns)
		})
	}, appslisters.NewStatefulSetLister}
}

// HorizontalPodAutoscalers is the factory's autoscaling/v2 HorizontalPodAutoscaler informer.
func (f *Factory) HorizontalPodAutoscalers() HorizontalPodAutoscalerInformer {
	return kind[autoscalinglisters.HorizontalPodAutoscalerLister]{func() cache.SharedIndexInformer {
		return informerFor(f, &autoscalingv2.HorizontalPodAutoscaler{}, f.client, func(ns string) lister[*autoscalingv2.HorizontalPodAutoscalerList] {
			return f.client.AutoscalingV2().HorizontalPodAutoscalers(ns)
		})
	}, autoscalinglisters.NewHorizontalPodAutoscalerLister}
}
