package agent

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// MemoryLimitAuto as --memory-limit derives the soft limit from the container's memory
	// limit (its cgroup), if it has one: autoMemoryLimit.
	MemoryLimitAuto = "auto"
	// memoryLimitHeadroom is the least --memory-limit=auto leaves between the soft limit and the
	// container's limit, for what the soft limit does not count: the binary's text and data
	// pages touched (30-40 MiB of an agent's RSS, measured in BenchmarkManySmall: peak RSS about
	// 40 MiB above the soft limit).
	memoryLimitHeadroom = 48 << 20

	// DefaultGCPercent is the agent's GOGC. At Go's 100 the heap runs up to twice what the
	// caches hold between collections: during BenchmarkManySmall's scale-out of 2000 TApps of 3
	// pods (about 64 MB live) the agent's peak RSS was 202.4 MiB, against 161.4 at 50 and 141.2
	// at 25 (target 150). The price, same benchmark: CPU time 44.5, 48.9 and 48.4 s, and at 25 the
	// agent no longer kept its client's rate limiter busy on the shared 2-core machine (every pod
	// Ready after 195, 198 and 232 s). --gc-percent raises it for an agent with memory to spare.
	// bench/RESULTS.md, "GOGC and trimmed pods".
	DefaultGCPercent = 25
	minGCPercent     = 1
	maxGCPercent     = 10000
)

// autoMemoryLimit is the soft limit for a container limit: the limit less 10% or
// memoryLimitHeadroom, whichever is more, but never below half the limit.
func autoMemoryLimit(cgroupLimit int64) int64 {
	return max(cgroupLimit-max(cgroupLimit/10, memoryLimitHeadroom), cgroupLimit/2)
}

// cgroupMemoryFiles are where a cgroup's memory limit is read: v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitDecision is the soft memory limit the agent sets, and why.
type memoryLimitDecision struct {
	// limit in bytes; 0: none is set by the agent (the runtime's own, math.MaxInt64 unless
	// GOMEMLIMIT says otherwise, stays).
	limit  int64
	source string
}

// decideMemoryLimit chooses the Go runtime's soft memory limit from --memory-limit (flag),
// $GOMEMLIMIT (env) and the cgroup's limit (cgroupLimit; 0 for none): GOMEMLIMIT, which the
// runtime applied at start, wins; then an explicit flag value ("0" sets none); "auto" (or "") takes
// autoMemoryLimit of the cgroup's limit, or sets none outside a limited cgroup.
func decideMemoryLimit(flag, env string, cgroupLimit int64) (memoryLimitDecision, error) {
	if env != "" {
		return memoryLimitDecision{source: "GOMEMLIMIT=" + env}, nil
	}
	if flag == MemoryLimitAuto || flag == "" {
		if cgroupLimit <= 0 {
			return memoryLimitDecision{source: "auto: no cgroup memory limit"}, nil
		}
		return memoryLimitDecision{
			limit:  autoMemoryLimit(cgroupLimit),
			source: fmt.Sprintf("auto: the cgroup memory limit %d less max(10%%, 48Mi)", cgroupLimit),
		}, nil
	}
	n, err := parseMemoryLimit(flag)
	if err != nil {
		return memoryLimitDecision{}, err
	}
	return memoryLimitDecision{limit: n, source: "--memory-limit=" + flag}, nil
}

// parseMemoryLimit parses a --memory-limit other than auto: a quantity of bytes (e.g. 200Mi)
// of 0 or at least 1Mi.
func parseMemoryLimit(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("not a quantity: %v", err)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 || (n > 0 && n < 1<<20) {
		return 0, fmt.Errorf("must be 0 or at least 1Mi")
	}
	return n, nil
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup, 0 when there is none (or
// it cannot be read).
func cgroupMemoryLimit() int64 {
	for _, f := range cgroupMemoryFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		// cgroup v1 says "no limit" with a huge number (page-rounded MaxInt64).
		if err != nil || n <= 0 || n >= math.MaxInt64/2 {
			return 0
		}
		return n
	}
	return 0
}

// decideGCPercent chooses GOGC: $GOGC (env), which the runtime applied at start, wins over the
// flag. 0 means the agent leaves the runtime's as it is.
func decideGCPercent(flag int, env string) (int, string) {
	if env != "" {
		return 0, "GOGC=" + env
	}
	return flag, "--gc-percent=" + strconv.Itoa(flag)
}

// applyGCPercent sets GOGC per --gc-percent (see decideGCPercent) and says what decided it.
func applyGCPercent(flag int) string {
	p, source := decideGCPercent(flag, os.Getenv("GOGC"))
	if p > 0 {
		debug.SetGCPercent(p)
	}
	return source
}

// applyMemoryLimit sets the Go runtime's soft memory limit per --memory-limit (see
// decideMemoryLimit) and returns what it decided.
func applyMemoryLimit(flag string) (memoryLimitDecision, error) {
	d, err := decideMemoryLimit(flag, os.Getenv("GOMEMLIMIT"), cgroupMemoryLimit())
	if err != nil {
		return d, err
	}
	if d.limit > 0 {
		debug.SetMemoryLimit(d.limit)
	}
	return d, nil
}
