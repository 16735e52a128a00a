package bench

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestCPUShares checks the attribution of the process's CPU to the roles:
// work done under a role's label, by the labelled goroutine or by one it
// started, counts for that role, and the shares add up to 1.
func TestCPUShares(t *testing.T) {
	stop, err := cpuShares(nil)
	if err != nil {
		t.Fatal(err)
	}
	spin := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	withRole(context.Background(), roleBroker, func(context.Context) {
		done := make(chan struct{})
		go func() { spin(300 * time.Millisecond); close(done) }() // inherits the label
		<-done
	})
	withRole(context.Background(), roleProcessor, func(context.Context) { spin(300 * time.Millisecond) })
	by, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, v := range by {
		sum += v
	}
	if by[roleBroker] <= 0 || by[roleProcessor] <= 0 || by[roleLoad] != 0 || math.Abs(sum-1) > 1e-9 {
		t.Fatalf("shares %v, want broker and processor only, adding up to 1", by)
	}
}
