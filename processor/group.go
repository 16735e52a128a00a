package processor

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// The processor's place in its consumer group: what the client's rebalance
// callbacks record, and leaving the group on shutdown within its deadline.

// groupMembership is what the processor knows of its place in the consumer
// group. The client's rebalance callbacks (rebalanceCallbacks) write it on
// the client's goroutines; Ready, Standby, Assigned, the loop and the
// boards' carry read it.
type groupMembership struct {
	// cancel ends the client's context: requests in flight, a JoinGroup
	// held by the coordinator included, fail at once.
	cancel   context.CancelFunc
	member   *memberRecorder // records the group member id; nil without Config.Group.MemberFile or with InstanceID
	joined   atomic.Bool     // a group generation was joined (with or without partitions) and not lost since
	assigned atomic.Int64    // input partitions owned now
	changes  atomic.Int64    // assignment changes (assigned, revoked, lost), for the boards' carry
	// rebalanceWaiting is set when the client holds a rebalance back for
	// the batches in hand (kgo.OnPartitionsCallbackBlocked); Run then
	// empties the pipeline and allows it.
	rebalanceWaiting atomic.Bool
}

// rebalanceCallbacks are the client options that keep p.group, the failed
// commits and the observer up to date through rebalances.
func (p *Processor) rebalanceCallbacks() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			// Called after every join, also when nothing is assigned: a
			// member beyond the partition count is a standby.
			p.group.joined.Store(true)
			if p.group.member != nil {
				p.group.member.record()
			}
			p.group.assigned.Add(int64(count(a)))
			p.group.changes.Add(1)
			p.cfg.Observer.Rebalance("assigned", count(a))
			p.lg.Info("partitions assigned", zap.Any("partitions", a))
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			p.group.assigned.Add(-int64(count(r)))
			p.group.changes.Add(1)
			p.commits.failed.forget(r)
			p.cfg.Observer.Rebalance("revoked", count(r))
			p.lg.Info("partitions revoked", zap.Any("partitions", r))
		}),
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { p.group.rebalanceWaiting.Store(true) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			p.group.joined.Store(false)
			p.group.assigned.Add(-int64(count(l)))
			p.group.changes.Add(1)
			p.commits.failed.forget(l)
			p.cfg.Observer.Rebalance("lost", count(l))
			p.lg.Warn("partitions lost", zap.Any("partitions", l))
		}),
	}
}

func count(m map[string][]int32) (n int) {
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// leave leaves the group and closes the client, all by the end of drain
// (or ShutdownTimeout from now, after a failure that is not a cancel) plus
// at most a second, whatever the group does (docs/DESIGN.md §3.8, §3.9):
//
//   - A joined member leaves through the client, which first lets a
//     rebalance in progress finish (so that its revocation runs); a group
//     waiting for members that died holds that rebalance for up to the
//     rebalance timeout, so the leave is waited for only until the
//     deadline.
//   - A member still joining (no assignment yet) does not wait: kgo sends
//     the JoinGroup on the client's context and its Close waits for the
//     answer, which the coordinator may hold for the rebalance timeout.
//
// Whatever was not done by the deadline is cut short: the client's context
// is cancelled (its requests in flight fail) and the member leaves by its
// id (a static member by its instance id) through a client of its own, so
// that it does not stay in the group as a dead member until the coordinator
// expires it. A static member that had joined does not leave: its restart
// takes its place (KIP-345).
func (p *Processor) leave(drain context.Context) {
	p.cl.AllowRebalance()
	ctx, cancel := context.WithTimeout(drain, p.cfg.ShutdownTimeout)
	defer cancel()
	joined := p.group.joined.Load()
	if !joined {
		cancel() // joining: nothing to revoke, no reason to wait
	}
	err := p.cl.LeaveGroupContext(ctx)
	if err == nil {
		if p.group.member != nil {
			p.group.member.forget()
		}
		p.closeClient()
		return
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		p.lg.Warn("leaving the group", zap.Error(err))
	}
	member, _ := p.cl.GroupMetadata()
	p.group.cancel()
	p.closeClient()
	static := p.cfg.Group.InstanceID != ""
	switch {
	case static && joined:
		return // a static member keeps its place for its restart (KIP-345)
	case member == "" && !static:
		return // not a member yet
	}
	if p.leaveAs(member) && p.group.member != nil {
		p.group.member.forget()
	}
}

// closeTimeout bounds the client's Close after the leave, and
// leaveAsTimeout the LeaveGroup sent by member id when the client could
// not leave in time: together at most a second past the deadline.
const (
	closeTimeout   = 300 * time.Millisecond
	leaveAsTimeout = 700 * time.Millisecond
)

// closeClient closes the client, waiting closeTimeout at most; its context
// is cancelled then, which ends whatever Close still waits for.
func (p *Processor) closeClient() {
	closed := make(chan struct{})
	go func() { p.cl.Close(); close(closed) }()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		p.group.cancel()
		p.lg.Warn("kafka client not closed in time: its requests in flight are cut short")
	}
	p.group.cancel()
}

// leaveAs sends a LeaveGroup for member through a client of its own, and
// reports whether the group no longer has it.
func (p *Processor) leaveAs(member string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), leaveAsTimeout)
	defer cancel()
	err := leaveGroupAs(ctx, p.cfg, member, "rostrum stopping while the group was rebalancing")
	switch {
	case err == nil:
		p.lg.Info("left the group through a client of its own", zap.String("member_id", member), zap.String("instance_id", p.cfg.Group.InstanceID))
		return true
	case errors.Is(err, kerr.UnknownMemberID):
		return true
	default:
		p.lg.Warn("group not left: the coordinator expires this member after the session timeout",
			zap.String("member_id", member), zap.Error(err))
		return false
	}
}
