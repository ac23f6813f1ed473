// Package historytest holds the workloads and revisions the history and undo tests share.
package historytest

import (
	"encoding/json"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

func meta(name, uid string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, UID: types.UID(uid), Generation: 6, Labels: labels}
}

// PodTemplate is a pod template labelled app=<app> with one container "app" running image.
func PodTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

func owner(kind, name, uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func udTemplate(image string) v1alpha1.SubsetTemplate {
	return v1alpha1.SubsetTemplate{StatefulSetTemplate: &v1alpha1.StatefulSetTemplateSpec{
		Spec: appsv1.StatefulSetSpec{Template: PodTemplate("orders", image)},
	}}
}

// udRevision is a ControllerRevision as the UnitedDeployment controller writes it.
func udRevision(name string, number int64, image, ownerUID string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace,
			Labels:          map[string]string{v1alpha1.LabelUnitedDeploymentName: "orders", "controller.kubernetes.io/hash": name[len("orders-"):]},
			OwnerReferences: owner("UnitedDeployment", "orders", ownerUID)},
		Data:     runtime.RawExtension{Raw: must(revisiondata.EncodeUnitedDeployment(ptr.To(udTemplate(image))))},
		Revision: number,
	}
}

// stsRevision is a ControllerRevision as the StatefulSet controller writes it.
func stsRevision(name string, number int64, image string) *appsv1.ControllerRevision {
	return NativeRevision("StatefulSet", "sts", "db", "sts-uid", name, number, image)
}

// DSRevision is a ControllerRevision of ds/agents as the DaemonSet controller writes it.
func DSRevision(name string, number int64, image string) *appsv1.ControllerRevision {
	return NativeRevision("DaemonSet", "ds", "agents", "ds-uid", name, number, image)
}

// NativeRevision is a ControllerRevision of workload app (its kind, short name and uid) as the
// StatefulSet and DaemonSet controllers write it: a patch that replaces spec.template.
func NativeRevision(kind, short, app, uid, name string, number int64, image string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace,
			Labels:          map[string]string{"app": app, "controller.kubernetes.io/hash": name[len(app+"-"):]},
			Annotations:     map[string]string{"kubernetes.io/change-cause": "kubectl set image " + short + "/" + app + " app=" + image},
			OwnerReferences: owner(kind, app, uid)},
		Data:     runtime.RawExtension{Raw: must(revisiondata.EncodeNative(ptr.To(PodTemplate(app, image))))},
		Revision: number,
	}
}

// TAppRevision is a ControllerRevision as the TApp controller writes it: spec.template running
// image, and a templatePool entry blue running blue when blue is not empty.
func TAppRevision(tapp, uid, hash string, number int64, image, blue string) *appsv1.ControllerRevision {
	spec := &v1alpha1.TAppSpec{Template: PodTemplate(tapp, image)}
	if blue != "" {
		spec.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": PodTemplate(tapp, blue)}
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: tapp + "-" + hash, Namespace: cmdtest.Namespace,
			Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent, v1alpha1.LabelTAppName: tapp,
				"controller.kubernetes.io/hash": hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "TApp",
				Name: tapp, UID: types.UID(uid), Controller: ptr.To(true)}}},
		Data:     runtime.RawExtension{Raw: must(revisiondata.EncodeTApp(spec))},
		Revision: number,
	}
}

// replicaSet is a ReplicaSet of Deployment deploy as the Deployment controller writes it.
func replicaSet(deploy, uid, hash string, number int, image string) *appsv1.ReplicaSet {
	tpl := PodTemplate(deploy, image)
	tpl.Labels["pod-template-hash"] = hash
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: deploy + "-" + hash, Namespace: cmdtest.Namespace,
		Labels:          map[string]string{"app": deploy, "pod-template-hash": hash},
		Annotations:     map[string]string{"deployment.kubernetes.io/revision": strconv.Itoa(number)},
		OwnerReferences: owner("Deployment", deploy, uid)}}
	rs.Spec.Template = tpl
	return rs
}

// Objects is a cluster with:
//   - ud/orders on revision 3 of 3 (orders:1, orders:2, orders:3), plus a revision with its
//     label left by a deleted UnitedDeployment of the same name; ud/fresh without revisions;
//   - sts/db on revision 2 of 2 (postgres:15, postgres:16);
//   - ds/agents on revision 2 of 2 (fluentd:1.16, fluentd:1.17), with the OnDelete update
//     strategy;
//   - deploy/front on revision 3 of 3 (nginx:1.24, 1.25 with a change cause, 1.26), plus a
//     ReplicaSet its selector matches but another Deployment controls; deploy/held, paused;
//   - tapp/web on revision 2 of 2 (nginx:1.24, nginx:1.25), still carrying the
//     previous-template annotation older plugins wrote (ignored); tapp/plain without revisions
//     (not yet synced by the agent); tapp/pooled on revision 2 of 2, which changed its
//     templatePool entry blue from nginx:2.0 to nginx:2.1;
//   - canary/checkout.
func Objects() []runtime.Object {
	orders := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders", "ud-uid", nil)}
	orders.Spec.Template = udTemplate("orders:3")
	orders.Status.UpdatedRevision = "orders-ccc"
	fresh := &v1alpha1.UnitedDeployment{ObjectMeta: meta("fresh", "fresh-uid", nil)}
	fresh.Spec.Template = udTemplate("orders:1")

	db := &appsv1.StatefulSet{ObjectMeta: meta("db", "sts-uid", nil)}
	db.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	db.Spec.Template = PodTemplate("db", "postgres:16")

	agents := &appsv1.DaemonSet{ObjectMeta: meta("agents", "ds-uid", nil)}
	agents.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agents"}}
	agents.Spec.Template = PodTemplate("agents", "fluentd:1.17")
	agents.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType

	front := &appsv1.Deployment{ObjectMeta: meta("front", "d-uid", nil)}
	front.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}
	front.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "front"}}
	front.Spec.Template = PodTemplate("front", "nginx:1.26")
	held := &appsv1.Deployment{ObjectMeta: meta("held", "held-uid", nil)}
	held.Spec.Paused = true
	held.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "held"}}
	held.Spec.Template = PodTemplate("held", "nginx:1.26")

	web := &v1alpha1.TApp{ObjectMeta: meta("web", "tapp-uid", nil)}
	web.Spec.Template = PodTemplate("web", "nginx:1.25")
	web.Annotations = map[string]string{"tapp.apps.workload.dev/previous-template": string(must(json.Marshal(map[string]interface{}{"template": PodTemplate("web", "nginx:1.23")})))}
	web.Status.UpdateRevision = "web-bbb"
	plain := &v1alpha1.TApp{ObjectMeta: meta("plain", "plain-uid", nil)}
	plain.Spec.Template = PodTemplate("plain", "nginx:1.25")
	pooled := &v1alpha1.TApp{ObjectMeta: meta("pooled", "pooled-uid", nil)}
	pooled.Spec.Template = PodTemplate("pooled", "nginx:1.25")
	pooled.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": PodTemplate("pooled", "nginx:2.1")}
	pooled.Status.UpdateRevision = "pooled-222"

	canary := &v1alpha1.Canary{ObjectMeta: meta("checkout", "c-uid", nil)}

	frontRS1 := replicaSet("front", "d-uid", "h1", 1, "nginx:1.24")
	frontRS2 := replicaSet("front", "d-uid", "h2", 2, "nginx:1.25")
	frontRS2.Annotations["kubernetes.io/change-cause"] = "bump to 1.25"
	frontRS3 := replicaSet("front", "d-uid", "h3", 3, "nginx:1.26")
	stranger := replicaSet("front", "other-uid", "h9", 9, "nginx:9")
	heldRS1 := replicaSet("held", "held-uid", "h1", 1, "nginx:1.25")
	heldRS2 := replicaSet("held", "held-uid", "h2", 2, "nginx:1.26")

	return []runtime.Object{orders, fresh, db, agents, front, held, web, plain, pooled, canary,
		udRevision("orders-aaa", 1, "orders:1", "ud-uid"),
		udRevision("orders-bbb", 2, "orders:2", "ud-uid"),
		udRevision("orders-ccc", 3, "orders:3", "ud-uid"),
		udRevision("orders-old", 7, "orders:0", "deleted-uid"),
		stsRevision("db-111", 1, "postgres:15"),
		TAppRevision("web", "tapp-uid", "aaa", 1, "nginx:1.24", ""),
		TAppRevision("web", "tapp-uid", "bbb", 2, "nginx:1.25", ""),
		TAppRevision("pooled", "pooled-uid", "111", 1, "nginx:1.25", "nginx:2.0"),
		TAppRevision("pooled", "pooled-uid", "222", 2, "nginx:1.25", "nginx:2.1"),
		stsRevision("db-222", 2, "postgres:16"),
		DSRevision("agents-5f6c", 1, "fluentd:1.16"),
		DSRevision("agents-7d8e", 2, "fluentd:1.17"),
		frontRS1, frontRS2, frontRS3, stranger, heldRS1, heldRS2,
	}
}

// Find returns the object of type T named name among Objects().
func Find[T metav1.Object](name string) T {
	for _, o := range Objects() {
		if t, ok := o.(T); ok && t.GetName() == name {
			return t
		}
	}
	panic("historytest: no object " + name)
}
