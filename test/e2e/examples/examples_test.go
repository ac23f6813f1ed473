// Package examples applies the repository's example manifests to a real API
// server with the project's CRDs installed: every manifest in examples/ must
// be accepted, and every manifest in examples/invalid/ refused with the
// message its first line names ("# expect-error: <message>").
package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-workload/kubectl-workload/examples"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	// Not DefaultCRDDir: without the CRDs this package cannot test anything,
	// so a missing directory must fail the start, not be skipped.
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.RepoPath("config", "crd"), GatewayAPI: true})
}

// applier creates manifests' objects through the dynamic client, finding
// each kind's resource through discovery.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T) *applier {
	cfg := localcluster.Shared(t).RESTConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// create creates obj in namespace ns (ignoring any namespace the manifest
// names, so that each test has its own). Unknown fields are refused, as
// kubectl does, so that a misspelt field cannot pass unnoticed.
func (a *applier) create(ctx context.Context, obj *unstructured.Unstructured, ns string, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// Discovery read once, right after the cluster came up, may predate a CRD that was
		// already Established (seen under load): read it again before calling the kind unknown.
		a.mapper.Reset()
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	client := a.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		obj.SetNamespace(ns)
		_, err = client.Namespace(ns).Create(ctx, obj, opts)
	} else {
		_, err = client.Create(ctx, obj, opts)
	}
	return err
}

// namespace returns a namespace of the test's own, deleted after it.
func namespace(t *testing.T) string { return e2eenv.Setup(t).NS }

func manifests(t *testing.T, pattern string) []string {
	files, err := filepath.Glob(filepath.Join(localcluster.RepoPath("examples"), pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no examples match %s", pattern)
	}
	return files
}

func TestExamplesAreAccepted(t *testing.T) {
	a := newApplier(t)
	for _, file := range manifests(t, "*.yaml") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := t.Context()
			objs, err := localcluster.ReadManifests(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 {
				t.Fatal("no objects")
			}
			// Created for real, in order, in a namespace of its own: a later
			// document may rely on an earlier one, as with kubectl apply.
			ns := namespace(t)
			for _, obj := range objs {
				if err := a.create(ctx, obj, ns, false); err != nil {
					t.Errorf("%s %s refused: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}

func TestInvalidExamplesAreRefusedWithTheirMessage(t *testing.T) {
	a := newApplier(t)
	ns := namespace(t)
	for _, file := range manifests(t, filepath.Join("invalid", "*.yaml")) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := t.Context()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := examples.ExpectedError(data)
			if !ok {
				t.Fatal(`first line is not "# expect-error: <message>"`)
			}
			objs, err := localcluster.DecodeManifests(data)
			if err != nil {
				t.Fatal(err)
			}
			// Dry run: what is refused is never stored, and what is
			// accepted (a valid document next to the invalid one) must
			// not be either.
			var refusals []string
			for _, obj := range objs {
				if err := a.create(ctx, obj, ns, true); err != nil {
					refusals = append(refusals, err.Error())
				}
			}
			if len(refusals) == 0 {
				t.Fatalf("accepted; want refused with %q", want)
			}
			for _, r := range refusals {
				if strings.Contains(r, want) {
					return
				}
			}
			t.Errorf("refused with %q; want a message containing %q", refusals, want)
		})
	}
}
