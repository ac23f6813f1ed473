package install

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// withApply makes the fake cluster accept server-side apply (the fake client's tracker does
// not): the applied object is returned as is, and a CRD comes back established, as a real API
// server reports it once it serves the kind.
func withApply(newCmd cmdtest.NewCmd) cmdtest.NewCmd {
	return withApplyOf(newCmd, true)
}

// withApplyOf is withApply, with CRDs coming back established or not.
func withApplyOf(newCmd cmdtest.NewCmd, crdsEstablished bool) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		f.(*cmdtest.Factory).FakeDynamicClient.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			p := a.(clienttesting.PatchAction)
			if p.GetPatchType() != types.ApplyPatchType {
				return false, nil, nil
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(p.GetPatch()); err != nil {
				return true, nil, err
			}
			if crdsEstablished && obj.GetKind() == "CustomResourceDefinition" {
				setCondition(obj, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
			}
			return true, obj, nil
		})
		return newCmd(f, streams)
	}
}

func setCondition(obj *unstructured.Unstructured, condType, status, reason, message string) {
	_ = unstructured.SetNestedSlice(obj.Object, []interface{}{map[string]interface{}{
		"type": condType, "status": status, "reason": reason, "message": message,
	}}, "status", "conditions")
}

// withCRDReads answers reads of CRDs: not established for the first notYet reads of each, then
// established (notYet < 0: never, with the names refused).
func withCRDReads(newCmd cmdtest.NewCmd, notYet int) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		reads := map[string]int{}
		f.(*cmdtest.Factory).FakeDynamicClient.PrependReactor("get", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
			name := a.(clienttesting.GetAction).GetName()
			reads[name]++
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("apiextensions.k8s.io/v1")
			obj.SetKind("CustomResourceDefinition")
			obj.SetName(name)
			switch {
			case notYet < 0:
				setCondition(obj, "NamesAccepted", "False", "MultipleNamesNotAllowed", `"tapp" is already in use`)
			case reads[name] > notYet:
				setCondition(obj, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
			}
			return true, obj, nil
		})
		return withApplyOf(newCmd, false)(f, streams)
	}
}

// Right after a create the API server needs a moment before it serves a new kind; install
// returns only once every CRD is established, so that workloads can be applied next.
func TestInstallWaitsForTheCRDsToBeEstablished(t *testing.T) {
	defer func(p time.Duration) { pollInterval = p }(pollInterval)
	pollInterval = time.Millisecond
	res := cmdtest.Run(t, withCRDReads(NewCmdInstall, 2), nil, "--crds-only")
	cmdtest.Golden(t, "install-waits-for-established", transcript(res))
}

func TestInstallTimesOutOnACRDThatIsNotEstablished(t *testing.T) {
	defer func(p time.Duration) { pollInterval = p }(pollInterval)
	pollInterval = time.Millisecond
	res := cmdtest.Run(t, withCRDReads(NewCmdInstall, -1), nil, "--crds-only", "--timeout=20ms")
	if res.Code != 1 || !strings.Contains(res.Fatal, "timed out after 20ms waiting for customresourcedefinition.apiextensions.k8s.io/analysistemplates.apps.workload.dev to be established: NamesAccepted=False (MultipleNamesNotAllowed: \"tapp\" is already in use)") {
		t.Fatalf("exit %d, error %q", res.Code, res.Fatal)
	}
}

var body = regexp.MustCompile(`(?s) \{.*\}\n?`)

// transcript is the golden transcript with apply bodies left out (the CRDs alone are thousands
// of lines; TestApplySendsTheManifests checks the bodies).
func transcript(res cmdtest.Result) string {
	for i, a := range res.Actions {
		res.Actions[i] = body.ReplaceAllString(a, " <manifest>")
	}
	return res.Transcript()
}

func TestInstall(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"install", nil},
		{"install-crds-only", []string{"--crds-only"}},
		{"install-dry-run-server", []string{"--dry-run=server"}},
		{"error-arguments", []string{"tapp/web"}},
		{"error-empty-image", []string{"--image="}},
		{"error-install-timeout-zero", []string{"--timeout=0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, withApply(NewCmdInstall), nil, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}

// Every object is sent whole, with the field manager, to its own resource; the image is the
// one asked for.
func TestApplySendsTheManifests(t *testing.T) {
	res := cmdtest.Run(t, withApply(NewCmdInstall), nil, "--image=registry.example.com/agent:v9", "--force-conflicts")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Fatal)
	}
	want, err := Manifests("registry.example.com/agent:v9", false)
	if err != nil {
		t.Fatal(err)
	}
	var applied []clienttesting.PatchAction
	for _, a := range res.Client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			applied = append(applied, p)
		}
	}
	if len(applied) != len(want) {
		t.Fatalf("%d applies, want %d", len(applied), len(want))
	}
	for i, p := range applied {
		opts := p.(clienttesting.PatchActionImpl).PatchOptions
		if opts.FieldManager != FieldManager || opts.Force == nil || !*opts.Force {
			t.Errorf("%s: patch options %+v, want field manager %s and force", want[i].GetName(), opts, FieldManager)
		}
		got := &unstructured.Unstructured{}
		if err := got.UnmarshalJSON(p.GetPatch()); err != nil {
			t.Fatal(err)
		}
		if got.GetName() != want[i].GetName() || got.GetKind() != want[i].GetKind() || p.GetNamespace() != want[i].GetNamespace() {
			t.Errorf("apply %d: %s %s/%s, want %s %s/%s", i, got.GetKind(), p.GetNamespace(), got.GetName(), want[i].GetKind(), want[i].GetNamespace(), want[i].GetName())
		}
		if got.GetKind() == "Deployment" && !strings.Contains(string(p.GetPatch()), `"image":"registry.example.com/agent:v9"`) {
			t.Errorf("the agent Deployment does not run the image asked for: %s", p.GetPatch())
		}
	}
}

// --dry-run=client prints the manifests as a YAML stream that decodes to exactly what install
// applies, and sends nothing.
func TestDryRunClientPrintsYAML(t *testing.T) {
	res := cmdtest.Run(t, withApply(NewCmdInstall), nil, "--dry-run=client")
	if res.Code != 0 || len(res.Actions) != 0 {
		t.Fatalf("exit %d %s, actions %v", res.Code, res.Fatal, res.Actions)
	}
	want, err := Manifests(DefaultImage(), false)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(res.Out), 4096)
	var got []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, obj)
	}
	if len(got) != len(want) {
		t.Fatalf("%d documents, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].GetKind() != want[i].GetKind() || got[i].GetName() != want[i].GetName() {
			t.Errorf("document %d is %s/%s, want %s/%s", i, got[i].GetKind(), got[i].GetName(), want[i].GetKind(), want[i].GetName())
		}
	}
	if !strings.Contains(res.Out, "image: "+DefaultImage()) {
		t.Errorf("the agent's image is not %s", DefaultImage())
	}
}

func TestEveryManifestKindHasAResource(t *testing.T) {
	objs, err := Manifests(DefaultImage(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		r, err := resourceOf(obj)
		if err != nil {
			t.Error(err)
			continue
		}
		if r.namespaced != (obj.GetNamespace() != "") {
			t.Errorf("%s: namespaced %v but namespace %q", displayName(obj), r.namespaced, obj.GetNamespace())
		}
	}
}

// installed is a cluster holding what install applied, plus objs.
func installed(t *testing.T, objs ...runtime.Object) []runtime.Object {
	manifests, err := Manifests(DefaultImage(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		objs = append(objs, m)
	}
	return objs
}

// workloads are a TApp, a Canary (with the agent's finalizer) and a UnitedDeployment with a
// subset TApp it controls.
func workloads() []runtime.Object {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "games"}}
	canary := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", Finalizers: []string{v1alpha1.FinalizerOrphanCanary}}}
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: "uid-orders"}}
	subset := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "orders-zone-a-x7k2p", Namespace: "shop",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.workload.dev/v1alpha1", Kind: "UnitedDeployment", Name: "orders", UID: "uid-orders", Controller: ptrTo(true)}}}}
	return []runtime.Object{tapp, canary, ud, subset}
}

var (
	canaries = v1alpha1.SchemeGroupVersion.WithResource("canaries")
	tapps    = v1alpha1.SchemeGroupVersion.WithResource("tapps")
)

// withAgentAndGC makes the fake cluster behave as a cluster with the workload-agent and the
// garbage collector: a deleted Canary is held by its finalizer (it gets a deletionTimestamp)
// until the agent releases it, which it does on the release-th list of canaries after the
// delete (never, when release is 0); a deleted UnitedDeployment's TApps go with it.
func withAgentAndGC(newCmd cmdtest.NewCmd, release int) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		client := f.(*cmdtest.Factory).FakeDynamicClient
		tracker := client.Tracker()
		deleted, lists := false, 0
		client.PrependReactor("delete", "canaries", func(a clienttesting.Action) (bool, runtime.Object, error) {
			d := a.(clienttesting.DeleteAction)
			if len(d.GetDeleteOptions().DryRun) > 0 {
				return false, nil, nil
			}
			obj, err := tracker.Get(canaries, d.GetNamespace(), d.GetName())
			if err != nil {
				return true, nil, err
			}
			m, _ := apimeta.Accessor(obj)
			m.SetDeletionTimestamp(ptrTo(metav1.Now()))
			deleted = true
			return true, nil, tracker.Update(canaries, obj, d.GetNamespace())
		})
		client.PrependReactor("list", "canaries", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if deleted {
				if lists++; lists == release {
					_ = tracker.Delete(canaries, "shop", "checkout")
				}
			}
			return false, nil, nil
		})
		client.PrependReactor("delete", "uniteddeployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
			d := a.(clienttesting.DeleteAction)
			if len(d.GetDeleteOptions().DryRun) == 0 {
				_ = tracker.Delete(tapps, "shop", "orders-zone-a-x7k2p")
			}
			return false, nil, nil
		})
		return newCmd(f, streams)
	}
}

func TestUninstall(t *testing.T) {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "games"}}
	canary := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop"}}
	tests := []struct {
		name string
		objs []runtime.Object
		args []string
		// release: the list of canaries (after the delete) on which the agent releases the
		// Canary; 0: never. poll: how often --force checks.
		release int
		poll    time.Duration
	}{
		{"uninstall", installed(t), nil, 0, 0},
		{"uninstall-nothing-installed", nil, nil, 0, 0},
		{"uninstall-dry-run-client", installed(t), []string{"--dry-run=client"}, 0, 0},
		{"uninstall-dry-run-server", installed(t), []string{"--dry-run=server"}, 0, 0},
		{"uninstall-keep-crds", installed(t, tapp), []string{"--keep-crds"}, 0, 0},
		{"uninstall-force", installed(t, tapp, canary), []string{"--force"}, 1, time.Millisecond},
		{"uninstall-force-waits-for-the-agent", installed(t, workloads()...), []string{"--force"}, 3, time.Millisecond},
		{"uninstall-force-dry-run-client", installed(t, workloads()...), []string{"--force", "--dry-run=client"}, 0, 0},
		{"uninstall-force-dry-run-server", installed(t, workloads()...), []string{"--force", "--dry-run=server"}, 0, 0},
		// One check (the next would come after an hour), then the timeout.
		{"error-force-timeout", installed(t, workloads()...), []string{"--force", "--timeout=50ms"}, 0, time.Hour},
		{"error-workloads-exist", installed(t, tapp, canary), nil, 0, 0},
		{"error-keep-crds-and-force", installed(t), []string{"--keep-crds", "--force"}, 0, 0},
		{"error-timeout-zero", installed(t), []string{"--force", "--timeout=0"}, 0, 0},
	}
	defer func(p time.Duration) { pollInterval = p }(pollInterval)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pollInterval = tt.poll
			res := cmdtest.Run(t, withAgentAndGC(NewCmdUninstall, tt.release), tt.objs, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}

// When the workloads are not gone in time, neither the agent nor the CRDs are deleted: the
// agent is what releases the Canaries.
func TestUninstallForceTimeoutDeletesNothingElse(t *testing.T) {
	defer func(p time.Duration) { pollInterval = p }(pollInterval)
	pollInterval = time.Hour
	res := cmdtest.Run(t, withAgentAndGC(NewCmdUninstall, 0), installed(t, workloads()...), "--force", "--timeout=50ms")
	if res.Code != 1 || !strings.Contains(res.Fatal, "canary shop/checkout (finalizer "+v1alpha1.FinalizerOrphanCanary+") left") {
		t.Fatalf("exit %d %q", res.Code, res.Fatal)
	}
	for _, a := range res.Actions {
		if strings.HasPrefix(a, "delete ") && !strings.HasPrefix(a, "delete uniteddeployments/") &&
			!strings.HasPrefix(a, "delete canaries/") && !strings.HasPrefix(a, "delete tapps/") {
			t.Errorf("deleted %s although the workloads were not gone", a)
		}
	}
}

// --dry-run=server sends every delete with dryRun=All.
func TestUninstallServerDryRunSendsDryRun(t *testing.T) {
	res := cmdtest.Run(t, NewCmdUninstall, installed(t), "--dry-run=server")
	n := 0
	for _, a := range res.Client.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			n++
			if len(d.DeleteOptions.DryRun) != 1 || d.DeleteOptions.DryRun[0] != metav1.DryRunAll {
				t.Errorf("delete %s without dryRun=All", d.GetName())
			}
		}
	}
	if n == 0 {
		t.Error("no delete sent")
	}
}
