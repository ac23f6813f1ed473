package localcluster

import (
	"os"
	"path/filepath"
)

// AuditLogName is the audit log's name in the cluster's log directory (LogDir) when
// WithAuditLog turned it on: kept with the component logs when tests fail, removed with the
// cluster otherwise.
const AuditLogName = "audit.log"

// WithAuditLog makes the cluster of opts write an API server audit log under policy (an
// audit.k8s.io/v1 Policy in YAML), as JSON lines written before each response (blocking mode:
// once a wait ends, every request before it is in the log), never rotated. It sets opts.Dir to a
// new temporary directory when empty (Stop removes it) and adds the flags, then extraFlags, to
// the API server's ExtraFlags. It returns the path the log will have.
func WithAuditLog(opts *Options, policy string, extraFlags ...string) (string, error) {
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", tempPrefix)
		if err != nil {
			return "", err
		}
		opts.Dir = dir
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return "", err
	}
	policyPath := filepath.Join(opts.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, []byte(policy), 0o644); err != nil {
		return "", err
	}
	logPath := filepath.Join(opts.Dir, "logs", AuditLogName)
	if opts.ExtraFlags == nil {
		opts.ExtraFlags = map[string][]string{}
	}
	opts.ExtraFlags[APIServer] = append(opts.ExtraFlags[APIServer], append([]string{
		"--audit-policy-file=" + policyPath,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
		"--audit-log-maxbackup=0",
	}, extraFlags...)...)
	return logPath, nil
}
