package agent

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-workload/kubectl-workload/config"
)

// Images cannot be built here (no container engine), so this test checks what the image relies
// on: the Dockerfile at the repository root against the Deployment of deployment.yaml (user,
// ports, entrypoint), the Makefile (the version stamped with the same -X flags) and go.mod (the Go
// release of the build image); .dockerignore lets in what the build copies; and the build
// command itself, run here, gives a static binary that reports the version it was given.

const repoRoot = "../.."

type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
	line int
}

type stage struct {
	from, name string
	inst       []instruction
}

// parseDockerfile reads the instructions, joining continued lines and dropping comments, by stage.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	var cur strings.Builder
	start, n := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " "), line: start}
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			fields = slices.DeleteFunc(fields, func(f string) bool { return strings.HasPrefix(f, "--") })
			s := stage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].inst = append(stages[len(stages)-1].inst, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.inst {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func agentDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	objs, err := config.AgentManifests()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GroupVersionKind() == (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
			d := &appsv1.Deployment{}
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("config/agent has no Deployment")
	return nil
}

// goBuildRun is the build stage's RUN of go build.
func goBuildRun(t *testing.T, build stage) string {
	t.Helper()
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			return in.args
		}
	}
	t.Fatal("the build stage has no RUN of go build")
	return ""
}

var xFlag = regexp.MustCompile(`-X ([^= ]+)=`)

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, then the runtime image)", len(stages))
	}
	build, final := stages[0], stages[1]
	d := agentDeployment(t)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]

	// The runtime image: minimal, and the user the Deployment runs as.
	if !regexp.MustCompile(`^(gcr\.io/distroless/static(-debian\d+)?:nonroot|scratch)(@sha256:[0-9a-f]{64})?$`).MatchString(final.from) {
		t.Errorf("runtime image %s: want gcr.io/distroless/static:nonroot (or scratch)", final.from)
	}
	users := final.all("USER")
	if len(users) != 1 {
		t.Fatalf("the runtime stage has %d USER instructions, want 1", len(users))
	}
	uid, gid, _ := strings.Cut(users[0].args, ":")
	if psc := pod.SecurityContext; psc == nil || psc.RunAsUser == nil {
		t.Error("the Deployment sets no runAsUser")
	} else if strconv.FormatInt(*psc.RunAsUser, 10) != uid {
		t.Errorf("USER %s: the Deployment's runAsUser is %d; they must agree (and be numeric, for runAsNonRoot)", users[0].args, *psc.RunAsUser)
	} else if psc.RunAsGroup != nil && strconv.FormatInt(*psc.RunAsGroup, 10) != gid {
		t.Errorf("USER %s: the Deployment's runAsGroup is %d", users[0].args, *psc.RunAsGroup)
	}
	if uid == "0" {
		t.Error("the image runs as root")
	}

	// Ports: EXPOSE lists the Deployment's container ports, which its flags listen on.
	var exposed, declared []string
	for _, in := range final.all("EXPOSE") {
		for _, p := range strings.Fields(in.args) {
			exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
		}
	}
	for _, p := range c.Ports {
		declared = append(declared, strconv.Itoa(int(p.ContainerPort)))
		flag := map[string]string{"metrics": "--metrics-addr", "health": "--health-addr"}[p.Name]
		if want := flag + "=:" + strconv.Itoa(int(p.ContainerPort)); !slices.Contains(c.Args, want) {
			t.Errorf("port %s %d: the container's args lack %s", p.Name, p.ContainerPort, want)
		}
	}
	sort.Strings(exposed)
	sort.Strings(declared)
	if !slices.Equal(exposed, declared) {
		t.Errorf("EXPOSE %v, the Deployment's container ports %v", exposed, declared)
	}

	// The entrypoint is the binary the build stage produced, copied into the runtime image; the
	// Deployment gives arguments only, so the entrypoint runs.
	entry := final.all("ENTRYPOINT")
	if len(entry) != 1 {
		t.Fatalf("%d ENTRYPOINT instructions, want 1", len(entry))
	}
	var argv []string
	if err := json.Unmarshal([]byte(entry[0].args), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("ENTRYPOINT %s: want the exec form [\"/path\"] (no shell in the image): %v", entry[0].args, err)
	}
	if len(c.Command) > 0 {
		t.Errorf("the Deployment's command %v overrides the image's ENTRYPOINT", c.Command)
	}
	run := goBuildRun(t, build)
	out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(run)
	if out == nil {
		t.Fatalf("go build without -o: %s", run)
	}
	copied := false
	for _, in := range final.all("COPY") {
		f := strings.Fields(in.args)
		if len(f) == 3 && f[0] == "--from="+build.name && f[1] == out[1] && f[2] == argv[0] {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the runtime stage does not COPY --from=%s %s %s", build.name, out[1], argv[0])
	}

	// The build: static, trimmed, ./cmd/agent, the same version stamping as the Makefile.
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/agent", "-s -w"} {
		if !strings.Contains(run, want) {
			t.Errorf("the go build lacks %s: %s", want, run)
		}
	}
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS :=(.*)$`).FindSubmatch(makefile)
	if ldflags == nil {
		t.Fatal("no LDFLAGS in the Makefile")
	}
	module := modulePath(t)
	var wantX, gotX []string
	for _, m := range xFlag.FindAllStringSubmatch(strings.ReplaceAll(string(ldflags[1]), "$(MODULE)", module), -1) {
		wantX = append(wantX, m[1])
	}
	for _, m := range xFlag.FindAllStringSubmatch(run, -1) {
		gotX = append(gotX, m[1])
	}
	sort.Strings(wantX)
	sort.Strings(gotX)
	if len(wantX) == 0 || !slices.Equal(gotX, wantX) {
		t.Errorf("the go build stamps %v, the Makefile %v", gotX, wantX)
	}

	// The Go release of go.mod.
	goVersion := goDirective(t)
	if m := regexp.MustCompile(`^golang:(\d+\.\d+)`).FindStringSubmatch(build.from); m == nil || !strings.HasPrefix(goVersion+".", m[1]+".") {
		t.Errorf("build image %s: go.mod says go %s", build.from, goVersion)
	}

	// .dockerignore lets in what the build stage copies.
	ignore, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ignore), "\n")
	if !slices.Contains(lines, "*") {
		t.Error(".dockerignore does not start from excluding everything (*)")
	}
	for _, in := range build.all("COPY") {
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			if !slices.Contains(lines, "!"+src) {
				t.Errorf("COPY %s: .dockerignore does not let %s in", in.args, src)
			}
		}
	}
}

func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	return string(m[1])
}

func goDirective(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// The Dockerfile's go build, run here with its build arguments, makes a static binary stamped
// with the version.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux; its binary runs only there")
	}
	stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	run := goBuildRun(t, stages[0])
	out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(run)[1]
	bin := filepath.Join(t.TempDir(), filepath.Base(out))
	cmd := exec.Command("sh", "-c", strings.Replace(run, "-o "+out, "-o "+bin, 1))
	cmd.Dir = repoRoot // WORKDIR /src holds the build context: the repository root
	cmd.Env = append(os.Environ(), "TARGETOS=linux", "TARGETARCH="+runtime.GOARCH, "VERSION=v9.9.9-dockerfile", "COMMIT=abc1234")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", run, err, b)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): it cannot run on distroless/static", p.Type)
		}
	}
	got, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, got)
	}
	if !strings.HasPrefix(string(got), "workload-agent v9.9.9-dockerfile (commit abc1234,") {
		t.Errorf("--version printed %q, want the version and commit the build was given", got)
	}
}
