package resolve

import (
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// newCmd prints what Target resolved: kind, name, namespace and the arguments left.
func newCmd(allowed ...workload.Kind) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		cmd := &cobra.Command{Use: "verb", Run: func(cmd *cobra.Command, args []string) {
			target, rest, err := Target(f, cmd, args, allowed...)
			cmdutil.CheckErr(err)
			fmt.Fprintf(streams.Out, "%s %s in %s, rest %v\n", target.Ref.Kind.Name, target.Ref.Name, target.Namespace, rest)
		}}
		AddFilenameFlag(cmd)
		return cmd
	}
}

func TestTarget(t *testing.T) {
	all := newCmd(workload.Kinds...)
	tests := []struct {
		args []string
		cmd  cmdtest.NewCmd
		want string // what the command printed, or the error it exited with
	}{
		{[]string{"tapp/web"}, all, "TApp web in test, rest []\n"},
		{[]string{"tapps/web", "a=b"}, all, "TApp web in test, rest [a=b]\n"},
		{[]string{"tapps.apps.workload.dev/web"}, all, "TApp web in test, rest []\n"},
		{[]string{"tapps.v1alpha1.apps.workload.dev/web"}, all, "TApp web in test, rest []\n"},
		{[]string{"TApp", "web"}, all, "TApp web in test, rest []\n"},
		{[]string{"ud", "orders", "zone-a=1"}, all, "UnitedDeployment orders in test, rest [zone-a=1]\n"},
		{[]string{"uniteddeployments.apps.workload.dev/orders"}, all, "UnitedDeployment orders in test, rest []\n"},
		{[]string{"canaries/checkout"}, all, "Canary checkout in test, rest []\n"},
		// What k9s's plugins pass ($RESOURCE_NAME.$RESOURCE_GROUP), and the singular form.
		{[]string{"canaries.apps.workload.dev", "checkout"}, all, "Canary checkout in test, rest []\n"},
		{[]string{"canary.apps.workload.dev/checkout"}, all, "Canary checkout in test, rest []\n"},
		{[]string{"tapp.apps.workload.dev/web"}, all, "TApp web in test, rest []\n"},
		{[]string{"uniteddeployment.apps.workload.dev/orders"}, all, "UnitedDeployment orders in test, rest []\n"},
		{[]string{"deployment.apps/front"}, all, "Deployment front in test, rest []\n"},
		{[]string{"statefulsets.apps", "db"}, all, "StatefulSet db in test, rest []\n"},
		{[]string{"deployments.apps/front"}, all, "Deployment front in test, rest []\n"},
		{[]string{"sts/db"}, all, "StatefulSet db in test, rest []\n"},
		{[]string{"daemonsets.apps/agents"}, all, "DaemonSet agents in test, rest []\n"},
		{[]string{"ds", "agents"}, all, "DaemonSet agents in test, rest []\n"},
		{[]string{"-f", "testdata/tapp.yaml"}, all, "TApp web in test, rest []\n"},
		{[]string{"-f", "testdata/tapp.yaml", "web=nginx:1.28"}, all, "TApp web in test, rest [web=nginx:1.28]\n"},
		{[]string{"-f", "testdata/two.yaml"}, all, "error: testdata/two.yaml holds 2 workloads (tapp/web, sts/db): this command acts on one; name it as TYPE/NAME"},
		// A file of a workload and the Canary that releases it (the examples): a verb of one of
		// the two kinds takes the one of its kind.
		{[]string{"-f", "testdata/two.yaml"}, newCmd(workload.TApp), "TApp web in test, rest []\n"},
		{[]string{"-f", "testdata/two.yaml", "1"}, newCmd(workload.Partitionable...), "error: testdata/two.yaml holds 2 workloads (tapp/web, sts/db): this command acts on one; name it as TYPE/NAME"},
		{[]string{"-f", "testdata/two.yaml"}, newCmd(workload.Canary), "error: testdata/two.yaml holds no canary (Canary): it holds tapp/web, sts/db"},
		{[]string{"-f", "testdata/missing.yaml"}, all, `error: the path "testdata/missing.yaml" does not exist`},
		{[]string{"pods/web-0"}, all, `error: unknown workload type "pods": use one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`},
		{[]string{"svc/web"}, all, `error: unknown workload type "svc": use one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`},
		{[]string{"widgets.example.com/web"}, all, `error: unknown workload type "widgets.example.com": use one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`},
		{[]string{"sts/db"}, newCmd(workload.Canary), "error: sts/db: this command does not work on a StatefulSet; it works on canary (Canary)"},
		{[]string{"statefulsets.apps/db"}, newCmd(workload.Pausable...), "error: sts/db: this command does not work on a StatefulSet; it works on tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment)"},
		{[]string{"tapp"}, all, `error: "tapp": name the workload as TYPE/NAME or TYPE NAME, where TYPE is one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`},
		{[]string{"tapp/"}, all, `error: "tapp/": the name is empty`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			res := cmdtest.Run(t, tt.cmd, nil, tt.args...)
			got := res.Out
			if res.Fatal != "" {
				got = res.Fatal
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if len(res.Actions) > 0 {
				t.Errorf("resolving read the cluster: %v", res.Actions)
			}
		})
	}
}

// discoveryCounter is a factory that counts the times a verb asked for discovery or a
// RESTMapper built on it.
type discoveryCounter struct {
	cmdutil.Factory
	asked *int
}

func (d discoveryCounter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	*d.asked++
	return d.Factory.ToDiscoveryClient()
}

func (d discoveryCounter) ToRESTMapper() (meta.RESTMapper, error) {
	*d.asked++
	return d.Factory.ToRESTMapper()
}

// TestOwnKindsResolveWithoutDiscovery: the names our CRDs declare resolve without discovery
// (the fast path of workload.Resolve); every other name, a category and our kinds' singular
// with its group among them, still resolves through discovery, as kubectl resolves it.
func TestOwnKindsResolveWithoutDiscovery(t *testing.T) {
	tests := []struct {
		args         []string
		want         string
		viaDiscovery bool
	}{
		{[]string{"tapp/web"}, "TApp web in test, rest []\n", false},
		{[]string{"TAPPS", "web"}, "TApp web in test, rest []\n", false},
		{[]string{"TApp", "web", "a=b"}, "TApp web in test, rest [a=b]\n", false},
		{[]string{"tapps.apps.workload.dev/web"}, "TApp web in test, rest []\n", false},
		{[]string{"ud/orders"}, "UnitedDeployment orders in test, rest []\n", false},
		{[]string{"uniteddeployments.apps.workload.dev", "orders"}, "UnitedDeployment orders in test, rest []\n", false},
		{[]string{"canary/checkout"}, "Canary checkout in test, rest []\n", false},
		{[]string{"canaries.apps.workload.dev/checkout"}, "Canary checkout in test, rest []\n", false},
		{[]string{"tapp.apps.workload.dev/web"}, "TApp web in test, rest []\n", true},
		{[]string{"tapps.v1alpha1.apps.workload.dev/web"}, "TApp web in test, rest []\n", true},
		// The category of our kinds names none of them alone: refused, through discovery.
		{[]string{"workload/web"}, `error: unknown workload type "workload": use one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`, true},
		{[]string{"deploy/front"}, "Deployment front in test, rest []\n", true},
		{[]string{"deployments.apps/front"}, "Deployment front in test, rest []\n", true},
		{[]string{"sts/db"}, "StatefulSet db in test, rest []\n", true},
		{[]string{"-f", "testdata/tapp.yaml"}, "TApp web in test, rest []\n", true},
		{[]string{"svc/web"}, `error: unknown workload type "svc": use one of tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment), sts (StatefulSet), ds (DaemonSet)`, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			asked := 0
			counted := func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
				return newCmd(workload.Kinds...)(discoveryCounter{f, &asked}, streams)
			}
			res := cmdtest.Run(t, counted, nil, tt.args...)
			got := res.Out
			if res.Fatal != "" {
				got = res.Fatal
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if (asked > 0) != tt.viaDiscovery {
				t.Errorf("discovery asked %d times, want it asked: %v", asked, tt.viaDiscovery)
			}
		})
	}
}
