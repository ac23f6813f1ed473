package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one running component.
type process struct {
	name    string
	bin     string
	args    []string
	env     []string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, set before done is closed
}

// startProcess starts bin with args, its output appended to logDir/name.log.
func startProcess(name, bin string, args []string, logDir string, env []string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor

	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own group: a terminal's Ctrl-C reaches the test, which then
		// stops the components in order, and stop can signal the whole group.
		Setpgid: true,
		// If the test binary dies without cleaning up (a -timeout panic,
		// SIGKILL), the kernel kills the component with it.
		Pdeathsig: syscall.SIGKILL,
	}
	fmt.Fprintf(logFile, "+ %s %q\n", bin, args)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, args: args, env: env, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an early exit, with the end of the log that explains it.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 20))
}

// stop asks the process group to terminate and kills it if it does not
// within grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the component forked is in its group; make sure it is gone.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	data = bytes.TrimRight(data, "\n")
	for i, n := len(data)-1, 0; i >= 0; i-- {
		if data[i] == '\n' {
			if n++; n == lines {
				return string(data[i+1:])
			}
		}
	}
	return string(data)
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
