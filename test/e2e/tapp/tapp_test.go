package tapp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

func TestScale(t *testing.T) {
	e := setup(t)
	e.startAgent()
	e.create(newTApp("web", 0))
	steps := []int{0, 20, 5, 20}
	for i, n := range steps {
		if i == len(steps)-1 {
			// The last step goes through the scale subresource, as kubectl scale and the HPA do.
			scale, err := e.Apps.AppsV1alpha1().TApps(e.NS).GetScale(e.Ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if scale.Status.Replicas != 5 || scale.Status.Selector != "app=web" {
				t.Errorf("scale status %+v, want 5 replicas and selector app=web", scale.Status)
			}
			scale.Spec.Replicas = int32(n)
			if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).UpdateScale(e.Ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else {
			e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Replicas = ptr.To(int32(n)) })
		}
		pods := e.waitSettled("web", n)
		for name, p := range pods {
			if p.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent {
				t.Errorf("%s: labels %v", name, p.Labels)
			}
		}
		t.Logf("settled at %d", n)
	}
	st := e.get("web").Status
	if st.ScaleLabelSelector != "app=web" || st.AppStatus != appsv1alpha1.AppRunning || len(st.Statuses) != 20 {
		t.Errorf("status: selector %q app %s statuses %d", st.ScaleLabelSelector, st.AppStatus, len(st.Statuses))
	}
	for i := 0; i < 20; i++ {
		if s := st.Statuses[fmt.Sprint(i)]; s != appsv1alpha1.InstanceRunningNow {
			t.Errorf("statuses[%d] = %s", i, s)
		}
	}
}

func TestKillAndStartKeepNameAndClaim(t *testing.T) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("db", 5)
	tp.Spec.ServiceName = "db"
	tp.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	e.create(tp)
	// This control plane runs no volume binder, so the claims stay Pending and so do the pods:
	// the test is about identity, not readiness.
	e.Eventually("5 pods with their claims", func() (bool, string) {
		pods := e.pods("db")
		return len(pods) == 5, fmt.Sprintf("%d pods", len(pods))
	})
	claim, err := e.Kube.CoreV1().PersistentVolumeClaims(e.NS).Get(e.Ctx, "data-db-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := e.pods("db")["db-3"]

	e.update("db", func(tp *appsv1alpha1.TApp) {
		tp.Spec.Statuses = map[string]appsv1alpha1.InstanceDesiredStatus{"3": appsv1alpha1.InstanceKilled}
	})
	e.Eventually("instance 3 killed", func() (bool, string) {
		tp, pods := e.get("db"), e.pods("db")
		s := tp.Status.Statuses["3"]
		return pods["db-3"] == nil && len(pods) == 4 && s == appsv1alpha1.InstanceKilledNow, fmt.Sprintf("%d pods, statuses[3]=%s", len(pods), s)
	})
	if c, err := e.Kube.CoreV1().PersistentVolumeClaims(e.NS).Get(e.Ctx, "data-db-3", metav1.GetOptions{}); err != nil || c.UID != claim.UID {
		t.Fatalf("claim of the killed instance: %v (uid %v, was %v)", err, c.UID, claim.UID)
	}

	e.update("db", func(tp *appsv1alpha1.TApp) { tp.Spec.Statuses = nil })
	e.Eventually("instance 3 started again", func() (bool, string) {
		p := e.pods("db")["db-3"]
		return p != nil && p.UID != before.UID, fmt.Sprintf("pod %v", p != nil)
	})
	p := e.pods("db")["db-3"]
	var claimName string
	for _, v := range p.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claimName = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claimName != "data-db-3" || p.Spec.Hostname != "db-3" || p.Spec.Subdomain != "db" {
		t.Errorf("restarted pod: claim %q hostname %q subdomain %q", claimName, p.Spec.Hostname, p.Spec.Subdomain)
	}
	if c, err := e.Kube.CoreV1().PersistentVolumeClaims(e.NS).Get(e.Ctx, "data-db-3", metav1.GetOptions{}); err != nil || c.UID != claim.UID {
		t.Fatalf("claim after restart: %v", err)
	}
}

func TestInPlaceImageUpdateKeepsPods(t *testing.T) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("web", 20)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("25%"))
	e.create(tp)
	before := e.waitSettled("web", 20)
	w := e.watchInvariants("web", 20, 5)

	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Image = "registry.invalid/app:v2" })
	after := e.waitSettled("web", 20)
	w.verify(t)
	for name, p := range after {
		if p.UID != before[name].UID {
			t.Errorf("%s was re-created (uid %s, was %s)", name, p.UID, before[name].UID)
		}
		if got := images(p); got != "main=registry.invalid/app:v2,proxy=registry.invalid/proxy:v1" {
			t.Errorf("%s: container statuses %s", name, got)
		}
		if p.Status.ContainerStatuses[0].RestartCount == 0 && p.Status.ContainerStatuses[1].RestartCount == 0 {
			t.Errorf("%s: no container restarted", name)
		}
		gate := false
		for _, c := range p.Status.Conditions {
			if c.Type == appsv1alpha1.ConditionInPlaceUpdateReady && c.Status == corev1.ConditionTrue {
				gate = true
			}
		}
		if !gate {
			t.Errorf("%s: readiness gate not True", name)
		}
	}
}

func TestChangeOfEnvRecreatesPods(t *testing.T) {
	e := setup(t)
	e.startAgent()
	e.create(newTApp("web", 5))
	before := e.waitSettled("web", 5)
	e.update("web", func(tp *appsv1alpha1.TApp) {
		tp.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	})
	after := e.waitSettled("web", 5)
	for name, p := range after {
		if p.UID == before[name].UID {
			t.Errorf("%s kept its uid after an env change", name)
		}
		if env := p.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "fast" {
			t.Errorf("%s: env %v", name, env)
		}
	}
}

func TestRollingUpdateRespectsMaxUnavailable(t *testing.T) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("web", 20)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	e.create(tp)
	e.waitSettled("web", 20)
	w := e.watchInvariants("web", 20, 2)
	// A command change re-creates every pod: deletions and creations, not only patches.
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Command = []string{"serve", "--v2"} })
	e.waitSettled("web", 20)
	// And an image change goes in place.
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[1].Image = "registry.invalid/proxy:v2" })
	e.waitSettled("web", 20)
	w.verify(t)
}

func TestPartitionUpdatesOnlyHighIDs(t *testing.T) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("web", 20)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(5))
	tp.Spec.UpdateStrategy.Partition = ptr.To[int32](15)
	e.create(tp)
	before := e.waitSettled("web", 20)
	oldHash := before["web-0"].Labels[appsv1alpha1.LabelTemplateHash]

	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Image = "registry.invalid/app:v2" })
	e.Eventually("ids 15 to 19 updated", func() (bool, string) {
		tp, pods := e.get("web"), e.pods("web")
		c := meta.FindStatusCondition(tp.Status.Conditions, "Progressing")
		done := 0
		for id := 15; id < 20; id++ {
			p := pods[fmt.Sprintf("web-%d", id)]
			if p != nil && e2eenv.PodReady(p) && strings.Contains(images(p), "app:v2") {
				done++
			}
		}
		state := fmt.Sprintf("%d of 5 updated, status gen %d/%d, progressing %+v", done, tp.Status.ObservedGeneration, tp.Generation, c)
		return done == 5 && tp.Status.ObservedGeneration == tp.Generation && c != nil && c.Reason == "RolloutComplete" &&
			tp.Status.UpdatedReplicas == 5 && tp.Status.ReadyReplicas == 20, state
	})
	for name, p := range e.pods("web") {
		var id int
		fmt.Sscanf(p.Labels[appsv1alpha1.LabelInstanceID], "%d", &id)
		if p.UID != before[name].UID {
			t.Errorf("%s re-created", name)
		}
		if updated := p.Labels[appsv1alpha1.LabelTemplateHash] != oldHash; updated != (id >= 15) {
			t.Errorf("%s (id %d): updated = %v", name, id, updated)
		}
	}
}

func TestPauseStopsAndResumeFinishes(t *testing.T) {
	e := setup(t)
	e.startAgent()
	tp := newTApp("web", 10)
	tp.Spec.MinReadySeconds = 2
	e.create(tp)
	e.waitSettled("web", 10)
	oldHash := e.pods("web")["web-0"].Labels[appsv1alpha1.LabelTemplateHash]
	updated := func() int {
		n := 0
		for _, p := range e.pods("web") {
			if p.Labels[appsv1alpha1.LabelTemplateHash] != oldHash {
				n++
			}
		}
		return n
	}

	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Image = "registry.invalid/app:v2" })
	e.Eventually("rollout under way", func() (bool, string) {
		n := updated()
		return n >= 2, fmt.Sprintf("%d updated", n)
	})
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.UpdateStrategy.Paused = true })
	e.Eventually("paused", func() (bool, string) {
		tp := e.get("web")
		c := meta.FindStatusCondition(tp.Status.Conditions, "Progressing")
		return tp.Status.ObservedGeneration == tp.Generation && c != nil && c.Reason == "RolloutPaused", fmt.Sprintf("%+v", c)
	})
	atPause := updated()
	time.Sleep(6 * time.Second) // three times minReadySeconds: an unpaused rollout would go on
	if n := updated(); n != atPause || n == 10 {
		t.Fatalf("%d instances updated while paused (%d at pause)", n, atPause)
	}
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.UpdateStrategy.Paused = false })
	e.waitSettled("web", 10)
	if n := updated(); n != 10 {
		t.Fatalf("%d of 10 updated after resume", n)
	}
}

func TestAgentKilledMidRolloutFinishes(t *testing.T) {
	e := setup(t)
	a := e.startAgent()
	tp := newTApp("web", 20)
	tp.Spec.MinReadySeconds = 1
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	e.create(tp)
	e.waitSettled("web", 20)
	oldHash := e.pods("web")["web-0"].Labels[appsv1alpha1.LabelTemplateHash]
	w := e.watchInvariants("web", 20, 2)

	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Template.Spec.Containers[0].Command = []string{"serve", "--v2"} })
	e.Eventually("rollout under way", func() (bool, string) {
		n := 0
		for _, p := range e.pods("web") {
			if p.Labels[appsv1alpha1.LabelTemplateHash] != oldHash {
				n++
			}
		}
		return n >= 4, fmt.Sprintf("%d re-created", n)
	})
	a.Kill()
	e.startAgent()
	e.waitSettled("web", 20)
	w.verify(t)
}

func TestLeaderElectionFailover(t *testing.T) {
	e := setup(t)
	args := []string{"--leader-elect=true", "--leader-elect-id=tapp-e2e-" + e.NS,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	agents := []*agentproc.Agent{e.startAgent(args...), e.startAgent(args...)}
	leaderOf := func() (int, string) {
		leaders, state := -1, ""
		for i, a := range agents {
			if !a.Running() {
				state += fmt.Sprintf(" agent%d exited", i)
				continue
			}
			v, _, err := a.Sample(e.Ctx, "workload_agent_leader", nil)
			state += fmt.Sprintf(" agent%d leader=%v err=%v", i, v, err)
			if v == 1 {
				if leaders >= 0 {
					return -2, state
				}
				leaders = i
			}
		}
		return leaders, state
	}
	var leader int
	e.Eventually("one leader", func() (bool, string) {
		var state string
		leader, state = leaderOf()
		return leader >= 0, state
	})
	e.create(newTApp("web", 3))
	e.waitSettled("web", 3)
	reconciles := func(a *agentproc.Agent) float64 {
		v, _, err := a.Sample(e.Ctx, "workload_agent_reconcile_total", map[string]string{"controller": "tapp"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	standby := agents[1-leader]
	if n := reconciles(standby); n != 0 {
		t.Fatalf("the standby agent reconciled %v times", n)
	}
	if reconciles(agents[leader]) == 0 {
		t.Fatal("the leader never reconciled")
	}

	agents[leader].Kill()
	killed := time.Now()
	e.Eventually("standby takes over", func() (bool, string) {
		l, state := leaderOf()
		return l == 1-leader, state
	})
	if took := time.Since(killed); took > 4*time.Second+5*time.Second {
		t.Errorf("takeover took %v with a 4s lease", took)
	}
	t.Logf("takeover after %v", time.Since(killed))
	e.update("web", func(tp *appsv1alpha1.TApp) { tp.Spec.Replicas = ptr.To[int32](5) })
	e.waitSettled("web", 5)
	if reconciles(standby) == 0 {
		t.Fatal("the new leader never reconciled")
	}
}
