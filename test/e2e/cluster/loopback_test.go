package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// TestComponentsListenOnLoopbackOnly reads every listening socket of every
// component from /proc and fails on any bound beyond 127.0.0.0/8 or ::1.
func TestComponentsListenOnLoopbackOnly(t *testing.T) {
	pids := localcluster.Shared(t).PIDs()
	if len(pids) != len(localcluster.Binaries) {
		t.Fatalf("running components %v; want all of %v", pids, localcluster.Binaries)
	}
	for name, pid := range pids {
		inodes := socketInodes(t, pid)
		var listening []string
		for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
			for _, s := range sockets(t, pid, table) {
				if !inodes[s.inode] || (strings.HasPrefix(table, "tcp") && s.state != "0A") {
					continue // not this process's, or not listening
				}
				listening = append(listening, table+" "+s.addr)
				if !loopback(s.addr) {
					t.Errorf("%s (pid %d) listens on %s %s", name, pid, table, s.addr)
				}
			}
		}
		if name != localcluster.Kwok && len(listening) == 0 {
			t.Errorf("%s (pid %d) listens on nothing; the test cannot see its sockets", name, pid)
		}
		t.Logf("%s: %v", name, listening)
	}
}

func socketInodes(t *testing.T, pid int) map[string]bool {
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return inodes
}

type socket struct{ addr, state, inode string }

// sockets parses /proc/<pid>/net/<table>: sl local_address rem_address st ...
// with the inode in the tenth column.
func sockets(t *testing.T, pid int, table string) []socket {
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
	if os.IsNotExist(err) {
		return nil // no IPv6 here
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []socket
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 10 {
			out = append(out, socket{addr: f[1], state: f[3], inode: f[9]})
		}
	}
	return out
}

// loopback reports whether a /proc/net address (hex IP:port, in host byte
// order per 32-bit word) is in 127.0.0.0/8 or is ::1.
func loopback(addr string) bool {
	ip, _, _ := strings.Cut(addr, ":")
	switch len(ip) {
	case 8: // IPv4, little-endian: 127.x.y.z is written zzyyxx7F
		return strings.HasSuffix(ip, "7F")
	case 32: // IPv6 ::1, or ::ffff:127.x.y.z
		return ip == "00000000000000000000000001000000" ||
			(strings.HasPrefix(ip, "0000000000000000FFFF0000") && strings.HasSuffix(ip, "7F"))
	}
	return false
}
