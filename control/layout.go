package control

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrStale is returned by PutLayout when If-Match names another version
// than the stored one (or "*" while there is none): HTTP 412.
var ErrStale = errors.New("control: layout version does not match If-Match")

// PutLayout stores room's layout parameters, body (a compact JSON object,
// not interpreted), under a new version, which it returns. ifMatch ""
// writes unconditionally; "*" only over an existing layout; a version
// only over that version (else ErrStale, with the current version, 0 for
// none). persist keeps the layout beyond Config.RoomTTL. The change is
// published to the layout topic before PutLayout returns.
func (s *Service) PutLayout(ctx context.Context, room string, body []byte, ifMatch string, persist bool) (int64, error) {
	k := roomKeys(s.opt.Env, room)
	member, err := s.arm(ctx, room)
	leased := time.Now() // no later than the step that takes the lease
	if err != nil {
		return 0, err
	}
	p := "0"
	if persist {
		p = "1"
	}
	v, confirmed, err := s.step(ctx, layoutScript, true, []string{k.Seq, k.Lay, k.Out},
		opPut, quote(room), string(body), ifMatch, p, ms(s.opt.RoomTTL), ms(s.opt.Lease))
	if err != nil {
		return 0, fmt.Errorf("control: put layout of %s: %w", room, err)
	}
	if len(v) < 5 {
		return 0, fmt.Errorf("control: put layout of %s: short reply %v", room, v)
	}
	code, version, field, record, expired := num(v[0]), num(v[1]), str(v[2]), str(v[3]), num(v[4])
	switch code {
	case layStored:
		if !confirmed {
			return 0, ErrUnconfirmed
		}
		if err := s.fault("step"); err != nil {
			return 0, err
		}
		if err := s.publish(ctx, leased, entry{k.Out, field}, s.opt.LayoutTopic, room, record); err != nil {
			return 0, err
		}
		if err := s.fault("published"); err != nil {
			return 0, err
		}
	case layStale:
		s.disarm(ctx, room, member, "")
		return version, ErrStale
	default:
		return 0, fmt.Errorf("control: put layout of %s: reply code %d", room, code)
	}
	s.disarm(ctx, room, member, field)
	if expired > 0 {
		s.recoverFor(ctx, room)
	}
	return version, nil
}

// Layout returns room's layout and its version; version 0 means none.
func (s *Service) Layout(ctx context.Context, room string) (int64, []byte, error) {
	k := roomKeys(s.opt.Env, room)
	v, _, err := s.step(ctx, layoutScript, false, []string{k.Seq, k.Lay, k.Out}, opGet, quote(room), "", "", "0", "0", ms(s.opt.Lease))
	if err != nil {
		return 0, nil, fmt.Errorf("control: read layout of %s: %w", room, err)
	}
	if len(v) < 5 || num(v[0]) != layGot {
		return 0, nil, fmt.Errorf("control: read layout of %s: reply %v", room, v)
	}
	if num(v[4]) > 0 {
		s.recoverFor(ctx, room)
	}
	return num(v[1]), []byte(str(v[2])), nil
}

// etag renders a layout version as an entity tag.
func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }
