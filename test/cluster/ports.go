package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// freePorts asks the kernel for n distinct free TCP ports on the loopback
// interface. The listeners are held until all n are picked so the same port is
// not returned twice; another process could still take one before the
// component binds it, in which case that component fails to start with
// "address already in use" in its log.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portInUse reports whether something still listens on the loopback port.
func portInUse(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	l.Close()
	return false
}
