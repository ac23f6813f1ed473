// Package agent lists the API permissions the workload-agent needs, one per call it makes, with
// the code that makes it. It is the reviewed counterpart of the RBAC manifests beside it
// (cluster_role.yaml, leader_election.yaml, notifications.yaml):
//
//   - permissions_test.go checks that those manifests grant exactly this list (no cluster needed);
//   - test/e2e/rbac runs the agent as its ServiceAccount with exactly those manifests on the local
//     control plane, drives every controller through its paths, and checks in the API server's
//     audit log that the agent was never refused and used every permission of this list (but
//     for the few its allow-list names, with the reason the test cannot reach them).
//
// Adding an API call to the agent means adding its permission here and to the manifests; the
// three must agree.
package agent

import "fmt"

// Namespace is where the agent runs and where its leader election Lease lives.
const Namespace = "workload-system"

// Permission is one verb on one resource.
type Permission struct {
	// Group is the API group ("" for the core group).
	Group string
	// Resource is the resource, with "/subresource" when there is one ("pods/status").
	Resource string
	// Verb is the RBAC verb (get, list, watch, create, update, patch, delete).
	Verb string
	// Namespace is empty for a permission granted cluster-wide (ClusterRole and
	// ClusterRoleBinding: every namespace, and cluster-scoped resources); otherwise the
	// permission is granted by a Role in that namespace only.
	Namespace string
	// Why names the code that needs it.
	Why string
}

// Key identifies a permission without its reason.
type Key struct {
	Group, Resource, Verb, Namespace string
}

// Key returns the permission's key.
func (p Permission) Key() Key {
	return Key{Group: p.Group, Resource: p.Resource, Verb: p.Verb, Namespace: p.Namespace}
}

func (k Key) String() string {
	g := k.Group
	if g == "" {
		g = "core"
	}
	where := "cluster-wide"
	if k.Namespace != "" {
		where = "in namespace " + k.Namespace
	}
	return fmt.Sprintf("%s %s/%s (%s)", k.Verb, g, k.Resource, where)
}

const (
	workloads    = "apps.workload.dev"
	apps         = "apps"
	batch        = "batch"
	gateway      = "gateway.networking.k8s.io"
	autoscaling  = "autoscaling"
	multicluster = "multicluster.x-k8s.io"
	core         = ""
)

// Informers: every informer lists and watches all namespaces (or the one of --namespace). Since
// client-go 1.35 an informer's first list is a watch with sendInitialEvents (WatchListClient); it
// falls back to a plain list when the API server does not stream lists, and a reflector lists
// again after some watch errors.
const (
	informerList  = "informer: initial list (and the fallback of a streaming watch list)"
	informerWatch = "informer: watch"
)

// Permissions is every permission the agent needs: what cluster_role.yaml, leader_election.yaml
// and notifications.yaml grant, no more.
var Permissions = []Permission{
	// TApps: the TApp controller's objects, and the UnitedDeployment controller's TApp subsets.
	{workloads, "tapps", "get", "", "canary: releaseTargetHold reads a targeted TApp from the API server as its Canary is deleted (inplace_tapp.go latest)"},
	{workloads, "tapps", "list", "", informerList + " (pkg/controller/tapp, pkg/controller/uniteddeployment)"},
	{workloads, "tapps", "watch", "", informerWatch},
	{workloads, "tapps", "create", "", "uniteddeployment: subsetKind.Create (kinds.go) of a subset TApp"},
	{workloads, "tapps", "update", "", "uniteddeployment: subsetKind.Update (kinds.go) of a subset TApp (subset template, replicas, partition); tapp: pruneTemplates (autoDeleteUnusedTemplate)"},
	{workloads, "tapps", "delete", "", "uniteddeployment: subsetKind.Delete (kinds.go) of a subset TApp removed from the topology"},
	{workloads, "tapps", "patch", "", "canary: the partition of a targeted TApp (merge patch), and its templates written back from a ControllerRevision on abort (JSON patch, inplace_tapp.go)"},
	{workloads, "tapps/status", "update", "", "tapp: updateStatus"},
	{workloads, "tapps/finalizers", "update", "", "tapp: pods and claims are created with a blocking controller reference to their TApp (OwnerReferencesPermissionEnforcement admission)"},

	// UnitedDeployments.
	{workloads, "uniteddeployments", "list", "", informerList},
	{workloads, "uniteddeployments", "watch", "", informerWatch},
	{workloads, "uniteddeployments", "get", "", "canary: releaseHold reads a UnitedDeployment target from the API server as its Canary is deleted"},
	{workloads, "uniteddeployments", "patch", "", "canary: a UnitedDeployment target's partitions (unitedDeploymentTarget.write), its template restored on abort (restoreUnitedDeployment) and the partitions dropped when its Canary is deleted (releaseHold)"},
	{workloads, "uniteddeployments/status", "update", "", "uniteddeployment: writeStatus"},
	{workloads, "uniteddeployments/finalizers", "update", "", "uniteddeployment: subsets and ControllerRevisions are created with a blocking controller reference (OwnerReferencesPermissionEnforcement admission)"},

	// Canaries.
	{workloads, "canaries", "list", "", informerList},
	{workloads, "canaries", "watch", "", informerWatch},
	{workloads, "canaries", "patch", "", "canary: addFinalizer, finalize (removes it), and the stable snapshot annotation (ensureSnapshot); notifications: the record of sent notifications (annotation notifications.apps.workload.dev/sent, Controller.record)"},
	{workloads, "canaries/status", "update", "", "canary: status update at the end of a sync"},
	{workloads, "canaries/status", "patch", "", "notifications: the NotificationsDelivered condition while a delivery fails and once it recovers (server-side apply of that one condition, applyCondition)"},
	{workloads, "canaries/finalizers", "update", "", "canary: the canary Deployment is created with a blocking controller reference (OwnerReferencesPermissionEnforcement admission)"},

	// Secrets are not here on purpose: the ClusterRole grants no Secret (config/agent_test.go
	// checks it). A check whose web header or Prometheus auth, header or CA comes from a Secret
	// needs get on that Secret, granted
	// by a Role in the Canary's namespace with resourceNames (docs/analysis.md, "Secrets");
	// without it the check's measurements are errors, so it ends inconclusive, never passed.

	// Analysis templates: read only, through informers (templates.go of the Canary controller).
	{workloads, "analysistemplates", "list", "", informerList + "; canary: the templates spec.analysis entries name"},
	{workloads, "analysistemplates", "watch", "", informerWatch},
	{workloads, "clusteranalysistemplates", "list", "", informerList + "; canary: the templates spec.analysis entries name"},
	{workloads, "clusteranalysistemplates", "watch", "", informerWatch},

	// Pods: the TApp controller's instances (informer filtered by the managed-by label).
	{core, "pods", "list", "", informerList + " (managed-by label); canary: the pods of a targeted DaemonSet during its release (label selector, inplace_daemonset.go), a StatefulSet or DaemonSet target's pods of its update revision for a podHealth check (listedPods, release_pods.go), and a StatefulSet or TApp target's pods once it was scaled up mid-release (inplace_statefulset_scale.go, inplace_tapp_scale.go)"},
	{core, "pods", "watch", "", informerWatch},
	{core, "pods", "create", "", "tapp: createInstance"},
	{core, "pods", "get", "", "tapp: createInstance, whose pod name is taken (AlreadyExists): is it ours?"},
	{core, "pods", "patch", "", "tapp: applyInPlace (images and labels)"},
	{core, "pods", "delete", "", "tapp: deletePods (scale down, kill, restart) and forceDeleteStuck; canary: the old pods of a targeted DaemonSet, per step, and a StatefulSet or TApp target's pods made on the update revision below its partition by a scale-up mid-release (converge)"},
	{core, "pods/status", "patch", "", "tapp: the in-place readiness gate condition (openGate, closeGate, markReady)"},
	{core, "pods/resize", "patch", "", "tapp: applyInPlace, container resources changed in place"},

	// PersistentVolumeClaims: TApp volumeClaimTemplates (informer filtered by the managed-by label).
	{core, "persistentvolumeclaims", "list", "", informerList + " (managed-by label)"},
	{core, "persistentvolumeclaims", "watch", "", informerWatch},
	{core, "persistentvolumeclaims", "create", "", "tapp: createInstance, a claim of volumeClaimTemplates"},

	// Namespaces: a Canary's subscriptions may come from its namespace's annotations (per-namespace
	// defaults); read when one of its triggers fires, not watched.
	{core, "namespaces", "get", "", "notifications: deliveries reads a Canary's namespace for its subscription annotations"},

	// Nodes.
	{core, "nodes", "get", "", "tapp: forceDeleteStuck reads the node of a pod stuck terminating (forceDeletePod)"},

	// Events, recorded by every controller and by leader election (client-go record: create, then
	// patch to count a repeated event).
	{core, "events", "create", "", "every controller's Events"},
	{core, "events", "patch", "", "a repeated Event: client-go's recorder patches its count"},

	// StatefulSets: UnitedDeployment subsets.
	{apps, "statefulsets", "list", "", informerList + " (managed-by label: subset StatefulSets); canary: the watch of each StatefulSet a Canary targets (fieldSelector metadata.name)"},
	{apps, "statefulsets", "watch", "", informerWatch},
	{apps, "statefulsets", "create", "", "uniteddeployment: subsetKind.Create (kinds.go) of a subset StatefulSet"},
	{apps, "statefulsets", "update", "", "uniteddeployment: subsetKind.Update (kinds.go) of a subset StatefulSet"},
	{apps, "statefulsets", "delete", "", "uniteddeployment: subsetKind.Delete (kinds.go) of a subset StatefulSet"},
	{apps, "statefulsets", "patch", "", "canary: the partition of a targeted StatefulSet, and its template written back from a ControllerRevision on abort (target.go)"},
	{apps, "statefulsets", "get", "", "canary: releaseHold reads a targeted StatefulSet from the API server as its Canary is deleted"},

	// DaemonSets: the ones Canaries target (inplace_daemonset.go), each watched by name.
	{apps, "daemonsets", "list", "", "canary: the watch of each DaemonSet a Canary targets (fieldSelector metadata.name)"},
	{apps, "daemonsets", "watch", "", informerWatch + " (canary: the watch of each targeted DaemonSet)"},
	{apps, "daemonsets", "patch", "", "canary: the hold of a targeted DaemonSet (updateStrategy OnDelete, its partition annotation), its template written back from a ControllerRevision on abort, its updateStrategy written back as its Canary is deleted"},
	{apps, "daemonsets", "get", "", "canary: releaseHold reads a targeted DaemonSet from the API server as its Canary is deleted"},

	// Deployments: UnitedDeployment subsets, and the Canary controller's canary and stable
	// Deployments.
	{apps, "deployments", "list", "", informerList + " (managed-by label: subset and canary Deployments); canary: the watch of each Deployment a Canary names (fieldSelector metadata.name)"},
	{apps, "deployments", "watch", "", informerWatch},
	{apps, "deployments", "get", "", "canary: orphanDeployments reads the canary Deployment from the API server before removing its owner reference; releaseDeploymentHold reads a target Deployment as its Canary is deleted"},
	{apps, "deployments", "create", "", "uniteddeployment: subsetKind.Create (kinds.go) of a subset Deployment; canary: createCanary"},
	{apps, "deployments", "update", "", "uniteddeployment: subsetKind.Update (kinds.go) of a subset Deployment; canary: updateCanaryTemplate"},
	{apps, "deployments", "patch", "", "canary: scaleCanary, scaleStable, restoreStable, and removing the owner reference when a Canary is deleted; pausing and resuming a target Deployment (executeDeploymentTarget, releaseDeploymentHold)"},
	{apps, "deployments", "delete", "", "uniteddeployment: subsetKind.Delete (kinds.go) of a subset Deployment; also what OwnerReferencesPermissionEnforcement requires to change a Deployment's owner references (canary: orphanDeployments); canary: deleting the temporary canary Deployment of a target Deployment after its release (executeDeploymentTarget)"},

	// Jobs: the job provider of Canary analysis (one Job per measurement, owned by the Canary).
	{batch, "jobs", "get", "", "canary analysis: analysis.Job.Measure reads its Job's outcome (no informer: a Job is polled only while its check measures)"},
	{batch, "jobs", "create", "", "canary analysis: analysis.Job.Measure starts the measurement's Job"},

	// Traffic routing of Canaries (docs/traffic.md): the HTTPRoute a Canary names (informer,
	// started only when the cluster serves the Gateway API) and its two Services (read, not
	// watched: only checked, through a short-lived cache).
	{gateway, "httproutes", "list", "", informerList + " (canary: routes of the agent's scope)"},
	{gateway, "httproutes", "watch", "", informerWatch},
	{gateway, "httproutes", "patch", "", "canary: writeRoute sets the backendRef weights and the header rule (JSON patch testing resourceVersion)"},
	{gateway, "httproutes", "get", "", "canary: writeRoute reads the route after a refused patch, to tell someone else's edit from a failure"},
	{core, "services", "get", "", "canary: trafficClients.service checks the stable and canary Services exist and select the right pods; getService reads the two Services of spec.blueGreen"},
	{"discovery.k8s.io", "endpointslices", "list", "", "canary: endpointsOf lists the EndpointSlices of the Service a blue-green route move sends everything to, before the route patch"},
	{core, "services", "patch", "", "canary: blueGreenPlan.execute sets the apps.workload.dev/bluegreen key of the selectors of spec.blueGreen's two Services"},

	// HorizontalPodAutoscalers: a Canary refuses one that scales the Deployment whose replicas its
	// release sets (autoscale.go: autoscalerOf, watchAutoscalers).
	{autoscaling, "horizontalpodautoscalers", "list", "", informerList + " (canary: autoscalerOf)"},
	{autoscaling, "horizontalpodautoscalers", "watch", "", informerWatch},

	// ClusterProfiles (SIG-Multicluster, published by the cluster manager): read only, to reach
	// the member clusters UnitedDeployment subsets name (pkg/fleet; the informer starts only
	// when the hub serves them). Nothing is written on the hub for members, and the agent's
	// identity in each member is config/rbac/member-role.yaml's.
	{multicluster, "clusterprofiles", "list", "", informerList + " (fleet: Registry.Member reads a subset's ClusterProfile)"},
	{multicluster, "clusterprofiles", "watch", "", informerWatch},

	// ControllerRevisions: the template history of UnitedDeployments and TApps (the TApp
	// controller's informer filtered by the managed-by label).
	{apps, "controllerrevisions", "list", "", informerList + "; canary: the revisions of a targeted DaemonSet (label selector, inplace_daemonset.go)"},
	{apps, "controllerrevisions", "watch", "", informerWatch},
	{apps, "controllerrevisions", "get", "", "revision.History.Create: the name is taken (AlreadyExists), a hash collision or a lagging cache; canary: restoreRevision, restoreTAppRevision and a DaemonSet target's write read a targeted StatefulSet's, TApp's or DaemonSet's stable revision"},
	{apps, "controllerrevisions", "create", "", "revision.History.Create"},
	{apps, "controllerrevisions", "update", "", "revision.History.Renumber: the template came back to an older revision"},
	{apps, "controllerrevisions", "delete", "", "revision.History.Delete: beyond revisionHistoryLimit"},

	// Leader election (client-go leaderelection, LeaseLock), in the agent's namespace only.
	{"coordination.k8s.io", "leases", "get", Namespace, "leader election: read the Lease"},
	{"coordination.k8s.io", "leases", "create", Namespace, "leader election: the first agent creates the Lease"},
	{"coordination.k8s.io", "leases", "update", Namespace, "leader election: acquire, renew and release the Lease"},

	// Notifications (notifications.yaml), in the agent's namespace only: the ConfigMap of services,
	// templates and triggers and the Secret of their credentials, read when a notification is to
	// be sent (no informer: nothing of them stays in the agent's memory).
	{core, "configmaps", "get", Namespace, "notifications: Controller.config reads the ConfigMap workload-notifications"},
	{core, "secrets", "get", Namespace, "notifications: Controller.config reads the Secret workload-notifications-secret ($key values of the services)"},
}

// MemberPermissions is every permission the agent needs in a member cluster, in the namespace of
// a UnitedDeployment whose subsets name it: what config/rbac/member-role.yaml grants, no more.
// Discovery (is tapps.apps.workload.dev served?) is allowed to every authenticated identity.
var MemberPermissions = []Permission{
	{apps, "statefulsets", "list", "", informerList + " (fleet: a member's subset workloads, filtered by fleet.MemberSelector)"},
	{apps, "statefulsets", "watch", "", informerWatch},
	{apps, "statefulsets", "create", "", "uniteddeployment: subsetKind.Create (kinds.go) of a subset StatefulSet in its member"},
	{apps, "statefulsets", "update", "", "uniteddeployment: subsetKind.Update of a subset StatefulSet in its member"},
	{apps, "statefulsets", "delete", "", "uniteddeployment: subsetKind.Delete, and the member finalizer (finalizer.go clearMember)"},
	{apps, "deployments", "list", "", informerList + " (fleet: a member's subset workloads)"},
	{apps, "deployments", "watch", "", informerWatch},
	{apps, "deployments", "create", "", "uniteddeployment: subsetKind.Create of a subset Deployment in its member"},
	{apps, "deployments", "update", "", "uniteddeployment: subsetKind.Update of a subset Deployment in its member"},
	{apps, "deployments", "delete", "", "uniteddeployment: subsetKind.Delete, and the member finalizer"},
	{workloads, "tapps", "list", "", informerList + " (fleet: Member.TApps, once the member serves TApps)"},
	{workloads, "tapps", "watch", "", informerWatch},
	{workloads, "tapps", "create", "", "uniteddeployment: subsetKind.Create of a subset TApp in its member"},
	{workloads, "tapps", "update", "", "uniteddeployment: subsetKind.Update of a subset TApp in its member"},
	{workloads, "tapps", "delete", "", "uniteddeployment: subsetKind.Delete, and the member finalizer"},
}
