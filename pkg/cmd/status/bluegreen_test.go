package status

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// blueGreenRelease is a blue-green release of checkout from its preview to its end: the
// preview coming up, paused for promote with its pre-promotion check passed, switched with the
// scale-down delay running, and completed with the old version scaled down.
func blueGreenRelease() []*v1alpha1.Canary {
	comingUp := blueGreenCanary(1, func(c *v1alpha1.Canary) {
		c.Status.Phase, c.Status.Message = v1alpha1.CanaryProgressing, "step 1 (preview): 4 of 10 canary pods available"
		c.Status.CanaryAvailable, c.Status.Analysis = 4, nil
		c.Status.Batches[0].State = v1alpha1.BatchUpgrading
	})
	completed := blueGreenCanary(3, func(c *v1alpha1.Canary) {
		c.Status.Phase, c.Status.Message = v1alpha1.CanaryCompleted, "release complete: 10 canary pods; stable Deployment checkout scaled to 0"
		c.Status.StableReplicas, c.Status.StableAvailable = 0, 0
		c.Status.Batches[2].State, c.Status.Batches[2].PauseEndTime = v1alpha1.BatchCompleted, nil
		c.Status.BlueGreen.ScaleDownTime = nil
	})
	return []*v1alpha1.Canary{comingUp, blueGreenCanary(1, nil), blueGreenCanary(3, nil), completed}
}

// status -w of a blue-green release: each line names the step and the side every request goes
// to, so that a log shows the switch; on a terminal the block adds both Services, the check
// and the scale-down countdown.
func TestStatusWatchBlueGreen(t *testing.T) {
	release := blueGreenRelease()
	t.Run("watch-canary-bluegreen", func(t *testing.T) {
		objs := make([]runtime.Object, len(release))
		for i, c := range release {
			objs[i] = c
		}
		res := cmdtest.Run(t, withWatches(t, "canaries", watchStep{events: modified(t, objs...)}), []runtime.Object{release[0]}, "canary/checkout", "-w")
		cmdtest.Golden(t, "watch-canary-bluegreen", transcript(res))
	})
	t.Run("terminal-bluegreen", func(t *testing.T) {
		var out strings.Builder
		p := Display{Terminal: true, Width: 120, Height: 24}.NewProgress(&out, "canary/checkout")
		for _, c := range release {
			st, err := canaryStatusOf(t, c)
			if err != nil {
				t.Fatal(err)
			}
			p.Show(st)
		}
		cmdtest.Golden(t, "terminal-bluegreen", strings.NewReplacer("\x1b", `\e`, "\r", `\r`).Replace(out.String()))
	})
}
