package tapp

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	appsv1listers "k8s.io/client-go/listers/apps/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// controllerKind is the GroupVersionKind of the owner references on TApp pods.
var controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind(Kind)

// hashObject hashes the JSON form of obj. JSON of Go structs and maps is deterministic (fields
// in declaration order, map keys sorted), and fields added to the API later are omitted while
// empty, so a hash survives library upgrades as long as the template is the same.
func hashObject(obj any) string {
	b, err := json.Marshal(obj)
	if err != nil {
		// Pod templates always marshal; a failure here is a programming error.
		panic(fmt.Sprintf("tapp: hashing %T: %v", obj, err))
	}
	h := fnv.New32a()
	_, _ = h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// TemplateHash is the hash of the whole pod template (metadata and spec). A pod whose
// LabelTemplateHash equals the hash of its instance's template is up to date.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	return hashObject(t)
}

// UniqHash is the hash of the template's pod spec with every container image (init, regular and
// ephemeral containers) and the resources of regular containers blanked, and without the
// template's metadata. Two templates with the same uniq hash differ only in images, container
// resources, labels and annotations, all of which can be changed on a running pod (resources
// through pods/resize), so a pod moves between them by an in-place update instead of being
// re-created.
func UniqHash(t *corev1.PodTemplateSpec) string {
	spec := blankImages(t)
	for i := range spec.Containers {
		spec.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	return hashObject(spec)
}

// imageOnlyUniqHash is the uniq hash of agents before in-place resize (images blanked, resources
// kept): pods they labelled still move in place when only images change.
func imageOnlyUniqHash(t *corev1.PodTemplateSpec) string {
	return hashObject(blankImages(t))
}

func blankImages(t *corev1.PodTemplateSpec) *corev1.PodSpec {
	spec := t.Spec.DeepCopy()
	for i := range spec.InitContainers {
		spec.InitContainers[i].Image = ""
	}
	for i := range spec.Containers {
		spec.Containers[i].Image = ""
	}
	for i := range spec.EphemeralContainers {
		spec.EphemeralContainers[i].Image = ""
	}
	return spec
}

// resizeOnlyHash is the hash of the whole template (metadata and spec) with the values of the
// resizable resources (cpu, memory) of its regular containers zeroed, their names kept (requests
// defaulted from limits, as the API server does). Two templates with the same resizeOnlyHash
// differ only in those values: a pod moves between them by a pods/resize alone.
func resizeOnlyHash(t *corev1.PodTemplateSpec) string {
	cp := t.DeepCopy()
	for i := range cp.Spec.Containers {
		r := effectiveResources(cp.Spec.Containers[i].Resources)
		for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
			for _, name := range resizable {
				if _, ok := list[name]; ok {
					list[name] = resource.Quantity{}
				}
			}
		}
		cp.Spec.Containers[i].Resources = r
	}
	return hashObject(cp)
}

// templateInfo is a template with its name and hashes, computed once per sync.
type templateInfo struct {
	// name is the templatePool key, or "" for spec.template.
	name     string
	template *corev1.PodTemplateSpec
	hash     string
	uniqHash string
	// imageOnlyUniqHash: see imageOnlyUniqHash.
	imageOnlyUniqHash string
	// resizeOnly: see resizeOnlyHash.
	resizeOnly string
}

func newTemplateInfo(name string, t *corev1.PodTemplateSpec) *templateInfo {
	return &templateInfo{name: name, template: t, hash: TemplateHash(t), uniqHash: UniqHash(t),
		imageOnlyUniqHash: imageOnlyUniqHash(t), resizeOnly: resizeOnlyHash(t)}
}

// TemplateName is the name of the template instance id runs: spec.templates[id], else
// spec.defaultTemplateName, else "" for spec.template.
func TemplateName(t *appsv1alpha1.TApp, id int) string {
	if n := t.Spec.Templates[strconv.Itoa(id)]; n != "" {
		return n
	}
	return t.Spec.DefaultTemplateName
}

// TemplateFor returns the pod template of instance id (see TemplateName) and its name, or an
// error if the name is not in spec.templatePool.
func TemplateFor(t *appsv1alpha1.TApp, id int) (*corev1.PodTemplateSpec, string, error) {
	name := TemplateName(t, id)
	if name == "" {
		return &t.Spec.Template, "", nil
	}
	tpl, ok := t.Spec.TemplatePool[name]
	if !ok {
		return nil, name, fmt.Errorf("instance %d uses template %q, which is not in templatePool", id, name)
	}
	return &tpl, name, nil
}

// templateSet resolves and hashes each template of a TApp at most once per sync.
type templateSet struct {
	tapp  *appsv1alpha1.TApp
	infos map[string]*templateInfo
	// hashes are every template of the TApp by hash, once byHash has needed them.
	hashes map[string]*templateInfo
	// revisions is the ControllerRevision cache heldTemplates reads (nil: none read); held
	// and heldErr are what it returned, once forNewInstance has needed them (heldLoaded).
	revisions  appsv1listers.ControllerRevisionLister
	held       *templateSet
	heldErr    error
	heldLoaded bool
}

func newTemplateSet(t *appsv1alpha1.TApp) *templateSet {
	return &templateSet{tapp: t, infos: map[string]*templateInfo{}}
}

// forInstance returns the template info of instance id.
func (s *templateSet) forInstance(id int) (*templateInfo, error) {
	name := TemplateName(s.tapp, id)
	if info, ok := s.infos[name]; ok {
		return info, nil
	}
	tpl, name, err := TemplateFor(s.tapp, id)
	if err != nil {
		return nil, err
	}
	info := newTemplateInfo(name, tpl)
	s.infos[name] = info
	return info, nil
}

// byHash finds a template of the TApp (spec.template or a pool entry) with the given hash.
func (s *templateSet) byHash(hash string) *templateInfo {
	if s.hashes == nil {
		s.hashes = map[string]*templateInfo{}
		add := func(name string, t *corev1.PodTemplateSpec) {
			info, ok := s.infos[name]
			if !ok {
				info = newTemplateInfo(name, t)
			}
			if _, dup := s.hashes[info.hash]; !dup {
				s.hashes[info.hash] = info
			}
		}
		add("", &s.tapp.Spec.Template)
		for name := range s.tapp.Spec.TemplatePool {
			tpl := s.tapp.Spec.TemplatePool[name]
			add(name, &tpl)
		}
	}
	return s.hashes[hash]
}

// resizeHashOf is the resize hash of the template pod was made from or last patched to: its
// LabelResizeHash, or for a pod labelled before that label existed, that of the template its
// LabelTemplateHash names, if the TApp still has it ("" if not).
func (s *templateSet) resizeHashOf(pod *corev1.Pod) string {
	if h, ok := pod.Labels[appsv1alpha1.LabelResizeHash]; ok {
		return h
	}
	if from := s.byHash(pod.Labels[appsv1alpha1.LabelTemplateHash]); from != nil {
		return from.resizeOnly
	}
	return ""
}

// labelTrusted says whether pod's LabelTemplateHash names the template it runs. A resize-only
// update (resizeOnlyHash) changes a pod's resources through pods/resize, which cannot change
// labels, and writes the label only with the status patch that opens the readiness gate (see
// shouldMarkReady); so the label is the record only of a pod with the gate open. A pod without
// the gate, or whose gate is closed for an update, may run other resources than its label says.
func labelTrusted(pod *corev1.Pod) bool {
	return hasReadinessGate(pod) && inPlaceTarget(pod) == ""
}

// runs reports whether pod runs template info: its label says so and is trusted, or (see
// labelTrusted) its template differs from info only in resource values (resizeHashOf) and the
// pod's spec has info's values.
func (s *templateSet) runs(pod *corev1.Pod, info *templateInfo) bool {
	label := pod.Labels[appsv1alpha1.LabelTemplateHash]
	if labelTrusted(pod) {
		return label == info.hash
	}
	if label != info.hash && s.resizeHashOf(pod) != info.resizeOnly {
		return false
	}
	return resourcesMatch(pod, info)
}

// runsHash is runs for the template of the given hash; a hash the TApp no longer has is
// compared with the pod's label.
func (s *templateSet) runsHash(pod *corev1.Pod, hash string) bool {
	if info := s.byHash(hash); info != nil {
		return s.runs(pod, info)
	}
	return pod.Labels[appsv1alpha1.LabelTemplateHash] == hash
}

// resizeOnly reports whether pod moves to template info by a pods/resize alone: its template
// differs from info only in resource values.
func (s *templateSet) resizeOnly(pod *corev1.Pod, info *templateInfo) bool {
	h := s.resizeHashOf(pod)
	return h != "" && h == info.resizeOnly
}

// PodName is the name of instance id's pod: <tapp>-<id>.
func PodName(tappName string, id int) string {
	return tappName + "-" + strconv.Itoa(id)
}

// PVCName is the name of instance id's claim made from volume claim template claim:
// <claim>-<tapp>-<id>.
func PVCName(claim, tappName string, id int) string {
	return claim + "-" + tappName + "-" + strconv.Itoa(id)
}

// instanceID reads the instance id of a pod (or PVC) from its LabelInstanceID.
func instanceID(obj metav1.Object) (int, bool) {
	v, ok := obj.GetLabels()[appsv1alpha1.LabelInstanceID]
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(v)
	if err != nil || id < 0 || strconv.Itoa(id) != v {
		return 0, false
	}
	return id, true
}

// NewPod builds the pod of instance id from template info: the template's labels, annotations,
// finalizers and spec, plus the TApp's identity labels, an owner reference to the TApp, the
// in-place readiness gate (unless inPlaceUpdate.readinessGate is false), hostname/subdomain when serviceName is set and a volume for each
// volume claim template (replacing a template volume of the same name).
func newPod(t *appsv1alpha1.TApp, id int, info *templateInfo) *corev1.Pod {
	tpl := info.template.DeepCopy()
	name := PodName(t.Name, id)
	labels := make(map[string]string, len(tpl.Labels)+5)
	for k, v := range tpl.Labels {
		labels[k] = v
	}
	for k, v := range identityLabels(t.Name, id) {
		labels[k] = v
	}
	labels[appsv1alpha1.LabelTemplateHash] = info.hash
	labels[appsv1alpha1.LabelUniqHash] = info.uniqHash
	labels[appsv1alpha1.LabelResizeHash] = info.resizeOnly
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       t.Namespace,
			Labels:          labels,
			Annotations:     tpl.Annotations,
			Finalizers:      tpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, controllerKind)},
		},
		Spec: tpl.Spec,
	}
	if appsv1alpha1.InPlaceReadinessGate(&t.Spec.UpdateStrategy.InPlaceUpdate) && !hasReadinessGate(pod) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1alpha1.ConditionInPlaceUpdateReady})
	}
	if t.Spec.ServiceName != "" {
		pod.Spec.Hostname = name
		pod.Spec.Subdomain = t.Spec.ServiceName
	}
	for _, claim := range t.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{
			Name: claim.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: PVCName(claim.Name, t.Name, id),
			}},
		}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == claim.Name {
				pod.Spec.Volumes[i] = vol
				replaced = true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
	return pod
}

// identityLabels are the labels every pod and PVC of instance id carries.
func identityLabels(tappName string, id int) map[string]string {
	return map[string]string{
		appsv1alpha1.LabelManagedBy:  appsv1alpha1.ManagedByAgent,
		appsv1alpha1.LabelTAppName:   tappName,
		appsv1alpha1.LabelInstanceID: strconv.Itoa(id),
	}
}

// newPVC builds the claim of instance id from a volume claim template. Claims carry no owner
// reference: they outlive the pod and the TApp, as StatefulSet claims do.
func newPVC(t *appsv1alpha1.TApp, claim *corev1.PersistentVolumeClaim, id int) *corev1.PersistentVolumeClaim {
	labels := make(map[string]string, len(claim.Labels)+3)
	for k, v := range claim.Labels {
		labels[k] = v
	}
	for k, v := range identityLabels(t.Name, id) {
		labels[k] = v
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PVCName(claim.Name, t.Name, id),
			Namespace:   t.Namespace,
			Labels:      labels,
			Annotations: claim.Annotations,
		},
		Spec: *claim.Spec.DeepCopy(),
	}
}

func hasReadinessGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == appsv1alpha1.ConditionInPlaceUpdateReady {
			return true
		}
	}
	return false
}
