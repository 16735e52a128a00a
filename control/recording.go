package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Answer is an HTTP answer decided in Redis: its status and JSON body.
type Answer struct {
	Status int
	Body   []byte
}

// Start starts a recording of room by user by, with params (a JSON object;
// nil: {}). Of any number of concurrent starts of a room that is not
// recording, exactly one gets 201 with the new state; the others get 409
// with the current state. idemKey, when not "", keeps the answer so that a
// retry with the same key gets it again. The command is published to the
// commands topic before Start returns a 201.
func (s *Service) Start(ctx context.Context, room, by string, params json.RawMessage, idemKey string) (Answer, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return s.change(ctx, room, opStart, "start", by, hex.EncodeToString(b[:]), string(params), idemKey)
}

// Stop stops room's recording (the one named recordingID, or whichever
// runs when it is ""). Of concurrent stops exactly one gets 200 with the
// stop's facts and a new, higher token; the others get 409 with the
// current state.
func (s *Service) Stop(ctx context.Context, room, by, recordingID, idemKey string) (Answer, error) {
	return s.change(ctx, room, opStop, "stop", by, recordingID, "", idemKey)
}

func (s *Service) change(ctx context.Context, room string, op int, action, by, id, params, idemKey string) (Answer, error) {
	k := roomKeys(s.opt.Env, room)
	member, err := s.arm(ctx, room)
	leased := time.Now() // no later than the step that takes the lease
	if err != nil {
		return Answer{}, err
	}
	idemTTL := "0"
	if idemKey != "" {
		idemTTL = ms(s.opt.IdempotencyTTL)
	}
	v, confirmed, err := s.step(ctx, recordingScript, true,
		[]string{k.Seq, k.Rec, k.Hist, k.Out, k.Idem(action, idemKey)},
		op, quote(room), quote(by), id, params, ms(s.opt.Lease), idemTTL, ms(s.opt.RoomTTL), s.opt.History)
	if err != nil {
		return Answer{}, fmt.Errorf("control: %s recording of %s: %w", action, room, err)
	}
	if len(v) < 5 {
		return Answer{}, fmt.Errorf("control: %s recording of %s: short reply %v", action, room, v)
	}
	code, body, field, record, expired := num(v[0]), str(v[1]), str(v[2]), str(v[3]), num(v[4])
	var a Answer
	switch code {
	case recWon:
		if !confirmed {
			return Answer{}, ErrUnconfirmed // index member and entry stay: the sweep publishes it if it survived
		}
		if err := s.fault("step"); err != nil {
			return Answer{}, err
		}
		if err := s.publish(ctx, leased, entry{k.Out, field}, s.opt.CommandsTopic, room, record); err != nil {
			return Answer{}, err // the entry stays; it is published after its lease
		}
		if err := s.fault("published"); err != nil {
			return Answer{}, err
		}
		a = Answer{Status: http.StatusCreated, Body: []byte(body)}
		if op == opStop {
			a.Status = http.StatusOK
		}
	case recConflict:
		field = ""
		a = Answer{Status: http.StatusConflict, Body: []byte(body)}
	case recReplay:
		field = ""
		status, rest, _ := strings.Cut(body, " ")
		n, _ := strconv.Atoi(status)
		a = Answer{Status: n, Body: []byte(rest)}
	default:
		return Answer{}, fmt.Errorf("control: %s recording of %s: reply code %d", action, room, code)
	}
	s.disarm(ctx, room, member, field)
	if expired > 0 {
		s.recoverFor(ctx, room)
	}
	return a, nil
}

// Recording returns room's state and its last finished recordings:
// {"state":"recording",…} or {"state":"idle"[,…the last stop]}, with
// "history": [newest first].
func (s *Service) Recording(ctx context.Context, room string) ([]byte, error) {
	k := roomKeys(s.opt.Env, room)
	v, _, err := s.step(ctx, recordingScript, false, []string{k.Seq, k.Rec, k.Hist, k.Out, k.Idem("", "")},
		opRead, quote(room), "", "", "", ms(s.opt.Lease), "0", ms(s.opt.RoomTTL), s.opt.History)
	if err != nil {
		return nil, fmt.Errorf("control: read recording of %s: %w", room, err)
	}
	if len(v) < 5 || num(v[0]) != recRead {
		return nil, fmt.Errorf("control: read recording of %s: reply %v", room, v)
	}
	if num(v[4]) > 0 {
		s.recoverFor(ctx, room)
	}
	state := str(v[1])
	var b strings.Builder
	b.WriteString(state[:len(state)-1])
	b.WriteString(`,"history":[`)
	for i, h := range v[5:] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(str(h))
	}
	b.WriteString("]}")
	return []byte(b.String()), nil
}

// quote renders a validated id as a JSON string.
func quote(id string) string {
	b, _ := json.Marshal(id)
	return string(b)
}
