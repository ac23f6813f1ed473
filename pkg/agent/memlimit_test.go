package agent

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// GOMEMLIMIT wins over the flag; auto takes the cgroup's limit less max(10%, 48Mi) (at least
// half of it) and sets none without one; an explicit quantity is taken as is, "0" sets none.
func TestDecideMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		cgroup    int64
		want      int64
		source    string
	}{
		{flag: "auto", cgroup: 0, want: 0, source: "auto: no cgroup"},
		{flag: "auto", cgroup: 512 << 20, want: 512<<20 - 512<<20/10, source: "auto: the cgroup"},
		{flag: "auto", cgroup: 148 << 20, want: 100 << 20, source: "auto: the cgroup"},
		{flag: "auto", cgroup: 64 << 20, want: 32 << 20, source: "auto: the cgroup"},
		{flag: "200Mi", cgroup: 512 << 20, want: 200 << 20, source: "--memory-limit=200Mi"},
		{flag: "0", cgroup: 512 << 20, want: 0, source: "--memory-limit=0"},
		{flag: "200Mi", env: "100MiB", cgroup: 512 << 20, want: 0, source: "GOMEMLIMIT=100MiB"},
		{flag: "auto", env: "off", want: 0, source: "GOMEMLIMIT=off"},
	} {
		d, err := decideMemoryLimit(tc.flag, tc.env, tc.cgroup)
		if err != nil {
			t.Errorf("%+v: %v", tc, err)
			continue
		}
		if d.limit != tc.want || !strings.HasPrefix(d.source, tc.source) {
			t.Errorf("%+v: got %d (%s), want %d (%s…)", tc, d.limit, d.source, tc.want, tc.source)
		}
	}
	for _, bad := range []string{"lots", "-1Mi", "100", "1.5Ki"} {
		if _, err := decideMemoryLimit(bad, "", 0); err == nil {
			t.Errorf("--memory-limit=%s accepted", bad)
		}
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	v2, v1 := filepath.Join(dir, "memory.max"), filepath.Join(dir, "limit_in_bytes")
	saved := cgroupMemoryFiles
	t.Cleanup(func() { cgroupMemoryFiles = saved })
	cgroupMemoryFiles = []string{v2, v1}
	for _, tc := range []struct {
		v2, v1 string
		want   int64
	}{
		{"", "", 0},
		{"max\n", "", 0},
		{"536870912\n", "", 512 << 20},
		{"", "9223372036854771712\n", 0},
		{"", "268435456\n", 256 << 20},
	} {
		os.Remove(v2)
		os.Remove(v1)
		if tc.v2 != "" {
			_ = os.WriteFile(v2, []byte(tc.v2), 0o644)
		}
		if tc.v1 != "" {
			_ = os.WriteFile(v1, []byte(tc.v1), 0o644)
		}
		if got := cgroupMemoryLimit(); got != tc.want {
			t.Errorf("v2 %q v1 %q: %d, want %d", tc.v2, tc.v1, got, tc.want)
		}
	}
}

func TestValidateMemoryLimit(t *testing.T) {
	for v, ok := range map[string]bool{"auto": true, "0": true, "150Mi": true, "1Gi": true, "x": false, "10Ki": false} {
		o := NewOptions()
		o.LeaderElect = false
		o.MemoryLimit = v
		err := o.Validate()
		if (err == nil) != ok {
			t.Errorf("--memory-limit=%s: %v", v, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--memory-limit") {
			t.Errorf("--memory-limit=%s: error %q does not name the flag", v, err)
		}
	}
}

// GOGC wins over --gc-percent, which is otherwise taken as is.
func TestDecideGCPercent(t *testing.T) {
	for _, tc := range []struct {
		flag   int
		env    string
		want   int
		source string
	}{
		{flag: DefaultGCPercent, want: 25, source: "--gc-percent=25"},
		{flag: 200, want: 200, source: "--gc-percent=200"},
		{flag: 50, env: "off", want: 0, source: "GOGC=off"},
		{flag: 50, env: "100", want: 0, source: "GOGC=100"},
	} {
		got, source := decideGCPercent(tc.flag, tc.env)
		if got != tc.want || source != tc.source {
			t.Errorf("%+v: got %d (%s)", tc, got, source)
		}
	}
}

// applyGCPercent sets the runtime's GOGC from the flag, and leaves it alone when $GOGC is set.
func TestApplyGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	t.Setenv("GOGC", "")
	if source := applyGCPercent(37); source != "--gc-percent=37" {
		t.Errorf("source %q", source)
	}
	if got := debug.SetGCPercent(100); got != 37 {
		t.Errorf("GOGC after --gc-percent=37: %d", got)
	}

	t.Setenv("GOGC", "80")
	if source := applyGCPercent(37); source != "GOGC=80" {
		t.Errorf("source %q", source)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC changed to %d although $GOGC is set", got)
	}
}
