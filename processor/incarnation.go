package processor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// The previous incarnation (docs/DESIGN.md §3.9).
//
// A processor killed while it was joining its group (SIGKILL, an OOM kill,
// a lost node) stays a member of the group until the coordinator expires
// it: with Apache Kafka after the session timeout, and as the leader of a
// new generation after the rebalance timeout (the pending SyncGroup). The
// in-process kfake broker never expires a new member that died waiting for
// its first JoinGroup answer once the group is stable again: its partitions
// stay assigned to it, unconsumed. A crash loop piles up such members.
//
// With a member file (Config.Group.MemberFile, beside the WAL, which belongs to
// one instance and is locked while it runs) a restart ends this: the
// processor records its member id as soon as the broker gave it one (the
// id is known before the JoinGroup that makes it a member is written, see
// memberRecorder), and the next process on the same WAL sends a LeaveGroup
// for that id before it joins. The dead member leaves at once, as a static
// member is replaced by its restart (KIP-345), and the group rebalances
// without waiting for a timeout. A clean stop leaves the group and removes
// the file. With an instance id (static membership) the broker replaces
// the member itself and no file is kept.
//
// The member file:
//
//	line 1  "rostrum-group-member 1"  magic and version
//	line 2  the group
//	line 3  the member id
//
// written to a temporary file and renamed, so that a crash leaves the old
// content or the new one.

const memberFileMagic = "rostrum-group-member 1"

// evictTimeout bounds the LeaveGroup of the previous incarnation at start:
// a broker that does not answer it leaves the member to the timeouts.
const evictTimeout = 5 * time.Second

// readMemberFile returns the group and member id recorded in path, or empty
// strings when there is no file.
func readMemberFile(path string) (group, member string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("member file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 || lines[0] != memberFileMagic || lines[1] == "" || lines[2] == "" {
		return "", "", fmt.Errorf("member file %s: not a %q file", path, memberFileMagic)
	}
	return lines[1], lines[2], nil
}

func writeMemberFile(path, group, member string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(memberFileMagic+"\n"+group+"\n"+member+"\n"), 0o644); err != nil {
		return fmt.Errorf("member file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("member file: %w", err)
	}
	return nil
}

// evictPrevious sends a LeaveGroup for the member the file records, through
// a client of its own (the group client would start joining first). A
// member the group no longer knows (it left cleanly, or expired) is fine;
// any other failure is logged and left to the session timeout.
func (p *Processor) evictPrevious(ctx context.Context) {
	if p.cfg.Group.MemberFile == "" || p.cfg.Group.InstanceID != "" {
		return
	}
	group, member, err := readMemberFile(p.cfg.Group.MemberFile)
	if err != nil {
		p.lg.Warn("previous group member not evicted", zap.Error(err))
		return
	}
	if member == "" || group != p.cfg.Group.Name {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, evictTimeout)
	defer cancel()
	err = leaveGroupAs(ctx, p.cfg, member, "rostrum restarted on the same WAL: its previous process is gone")
	switch {
	case err == nil:
		p.lg.Info("previous group member evicted", zap.String("group", group), zap.String("member_id", member))
	case errors.Is(err, kerr.UnknownMemberID):
		// Gone already: it left cleanly or the group expired it.
	default:
		p.lg.Warn("previous group member not evicted: the group expires it after the session timeout",
			zap.String("group", group), zap.String("member_id", member), zap.Error(err))
	}
}

// leaveGroupAs sends a LeaveGroup for member of cfg.Group (with
// cfg.InstanceID, the static member of that instance, whatever its member
// id) through a client of its own, and returns the group's answer.
func leaveGroupAs(ctx context.Context, cfg Config, member, reason string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.KafkaOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = cfg.Group.Name
	req.MemberID = member
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = member
	if cfg.Group.InstanceID != "" {
		m.InstanceID = kmsg.StringPtr(cfg.Group.InstanceID)
	}
	m.Reason = kmsg.StringPtr(reason)
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, mr := range resp.Members {
		if err := kerr.ErrorForCode(mr.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// memberRecorder keeps Config.Group.MemberFile up to date with the client's member
// id. It is a kgo hook: after each JoinGroup request is written it records
// the id the request carries, which the client learnt from the broker's
// MEMBER_ID_REQUIRED answer (KIP-394) before it wrote the JoinGroup that
// makes it a member. A process killed before that write is no member yet
// (the broker forgets a pending id after the session timeout); one killed
// after the record is evicted by its restart.
type memberRecorder struct {
	path, group string
	lg          *zap.Logger
	cl          atomic.Pointer[kgo.Client] // nil until New has the client

	mu   sync.Mutex
	last string
	gone bool // the group was left: nothing to record any more
}

var _ kgo.HookBrokerWrite = (*memberRecorder)(nil)

// joinGroupKey is the JoinGroup API key.
const joinGroupKey = 11

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (r *memberRecorder) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == joinGroupKey {
		r.record()
	}
}

// record writes the client's member id to the file when it changed.
func (r *memberRecorder) record() {
	cl := r.cl.Load()
	if cl == nil {
		return
	}
	member, _ := cl.GroupMetadata()
	r.mu.Lock()
	defer r.mu.Unlock()
	if member == "" || member == r.last || r.gone {
		return
	}
	if err := writeMemberFile(r.path, r.group, member); err != nil {
		r.lg.Warn("group member id not recorded: a crash now leaves the member to the session timeout", zap.Error(err))
		return
	}
	r.last = member
}

// forget removes the file once the group was left cleanly.
func (r *memberRecorder) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone = true
	if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.lg.Warn("member file not removed", zap.Error(err))
	}
}
