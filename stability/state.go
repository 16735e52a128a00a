package stability

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// stateVersion is the first field of an encoded State.
const stateVersion = "1"

// AppendText appends the text form of s to b (encoding.TextAppender). An
// empty State encodes as nothing at all, so a room without timers stores no
// state. Otherwise:
//
//	1|<pending>|<out>        version 1
//	<pending>, <out>:        id=since,id=since,…   (may be empty)
//	since:                   Unix ms, decimal
//
// Ids are room member ids ([A-Za-z0-9._:@-]), which never contain '|', ','
// or '='. The entries keep their order, so equal states encode equally.
func (s *State) AppendText(b []byte) ([]byte, error) {
	if s.Empty() {
		return b, nil
	}
	b = append(b, stateVersion...)
	for _, list := range [2][]Timer{s.Pending, s.Out} {
		b = append(b, '|')
		for i, e := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e.ID...)
			b = append(b, '=')
			b = strconv.AppendInt(b, e.Since, 10)
		}
	}
	return b, nil
}

// String returns the text form of s (see AppendText).
func (s *State) String() string {
	b, _ := s.AppendText(nil)
	return string(b)
}

// ErrStateFormat is wrapped by UnmarshalText for text that is not a State.
var ErrStateFormat = errors.New("stability: bad state")

// UnmarshalText sets s from its text form (see AppendText); empty text is
// the empty State. It reuses s's slices.
func (s *State) UnmarshalText(text []byte) error {
	s.Pending, s.Out = s.Pending[:0], s.Out[:0]
	if len(text) == 0 {
		return nil
	}
	str := string(text)
	ver, rest, ok := strings.Cut(str, "|")
	if !ok || ver != stateVersion {
		return fmt.Errorf("%w: %.40q: want version %s", ErrStateFormat, str, stateVersion)
	}
	pend, out, ok := strings.Cut(rest, "|")
	if !ok || strings.Contains(out, "|") {
		return fmt.Errorf("%w: %.40q: want two lists", ErrStateFormat, str)
	}
	var err error
	if s.Pending, err = parseTimers(s.Pending, pend); err != nil {
		return fmt.Errorf("%w: pending: %v", ErrStateFormat, err)
	}
	if s.Out, err = parseTimers(s.Out, out); err != nil {
		return fmt.Errorf("%w: out: %v", ErrStateFormat, err)
	}
	return nil
}

func parseTimers(dst []Timer, list string) ([]Timer, error) {
	if list == "" {
		return dst, nil
	}
	for e := range strings.SplitSeq(list, ",") {
		id, since, ok := strings.Cut(e, "=")
		if !ok || id == "" {
			return dst, fmt.Errorf("entry %.40q: want id=since", e)
		}
		t, err := strconv.ParseInt(since, 10, 64)
		if err != nil || t < 0 || strconv.FormatInt(t, 10) != since {
			return dst, fmt.Errorf("entry %.40q: since is not a time in ms (canonical decimal)", e)
		}
		if indexTimer(dst, id) >= 0 {
			return dst, fmt.Errorf("entry %.40q: id repeated", e)
		}
		dst = append(dst, Timer{ID: id, Since: t})
	}
	return dst, nil
}
