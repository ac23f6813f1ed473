package canary

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A second blue-green Canary naming the Services and the stable Deployment of an older one
// (aborted or not) is Degraded, naming the older Canary and what they share, and writes nothing
// to the Services or Deployments; once the older one is gone it releases.
func TestBlueGreenSharedServicesKeptByTheOldest(t *testing.T) {
	cn := blueGreenCanary(nil)
	cn.CreationTimestamp = metav1.NewTime(start)
	f := blueGreenFixture(t, cn)
	older := blueGreenCanary(nil)
	older.Name, older.UID = "shop", "shop-uid"
	older.Spec.Canary.Name = "checkout-v2"
	older.Spec.Rollback = true
	older.CreationTimestamp = metav1.NewTime(start.Add(-time.Hour))
	if err := f.client.Tracker().Add(older); err != nil {
		t.Fatal(err)
	}
	f.step(addFinalizer, writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	want := `Canary "shop" releases Service "checkout", Service "checkout-preview", Deployment "checkout" already: two blue-green Canaries cannot share a Service or the stable Deployment; delete this one or give it its own (nothing is changed until then)`
	if c.Status.Message != want {
		t.Errorf("message\n  got  %q\n  want %q", c.Status.Message, want)
	}
	if r := c.Status.Conditions; len(r) == 0 {
		t.Errorf("no conditions")
	}
	if f.selectorOf("checkout-preview") != "" {
		t.Errorf("preview selector written: %q", f.selectorOf("checkout-preview"))
	}
	f.settled()

	if err := f.client.Tracker().Delete(canariesGVR, ns, "shop"); err != nil {
		t.Fatal(err)
	}
	f.step(writeSnapshot, labelStable, writeStatus)
}

// The older Canary's deletion enqueues the one it kept Degraded, which then takes the claim.
func TestBlueGreenClaimPassesOnDeletion(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(nil))
	older := blueGreenCanary(nil)
	older.Name, older.UID = "shop", "shop-uid"
	f.refresh()
	if n := f.ctrl.Queue.Len(); n != 0 {
		t.Fatalf("queue holds %d before", n)
	}
	f.ctrl.claimantsHandler().OnDelete(older)
	if n := f.ctrl.Queue.Len(); n != 1 {
		t.Fatalf("queue holds %d after the other Canary's deletion, want checkout", n)
	}
	unrelated := blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.ActiveService, bg.PreviewService = "cart", "cart-preview" })
	unrelated.Name, unrelated.Spec.StableRef.Name = "cart", "cart"
	f.ctrl.claimantsHandler().OnDelete(unrelated)
	if n := f.ctrl.Queue.Len(); n != 1 {
		t.Fatalf("queue holds %d after an unrelated deletion", n)
	}
}
