package testenv

import (
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process may take it before the caller binds it; StartRedis and
// StartRedisCluster retry on a fresh port when that happens.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clusterBusOffset is how far above its client port a Redis Cluster node
// listens for the cluster bus.
const clusterBusOffset = 10000

// freeClusterPort returns a port p on the loopback address host such that p
// and its cluster bus port p+10000 were both free on host a moment ago.
// Ephemeral ports above 55535 have no bus port and are passed over.
func freeClusterPort(tb testing.TB, host string) int {
	tb.Helper()
	ip := net.ParseIP(host)
	for range 100 {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip})
		if err != nil {
			tb.Fatalf("testenv: free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if p+clusterBusOffset <= 65535 {
			bus, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: p + clusterBusOffset})
			if err == nil {
				_ = bus.Close()
				_ = l.Close()
				return p
			}
		}
		_ = l.Close()
	}
	tb.Fatalf("testenv: no free port p with p+%d free on %s after 100 tries", clusterBusOffset, host)
	return 0
}
