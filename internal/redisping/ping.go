// Package redisping checks that a freshly started redis-server answers,
// speaking raw RESP so that it needs no client library. The test harness and
// the demo use it to wait for the servers they start.
package redisping

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// Ping sends PING to addr and expects +PONG within a second.
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	return nil
}
