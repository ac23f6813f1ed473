package localcluster

import (
	"net"
)

// freePorts returns n distinct ports free on 127.0.0.1. All listeners stay
// open until every port is chosen, so the n ports differ; another process can
// still take one before the component binds it, in which case the component
// fails to start and the error says so.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
