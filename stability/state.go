package stability

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// stateVersion is the first field of an encoded State; version 1 (no
// Shown list) is still read.
const (
	stateVersion   = "2"
	stateVersionV1 = "1"
)

// AppendText appends the text form of s to b (encoding.TextAppender). A
// State without timers and without Shown encodes as nothing at all, so such
// a room stores no state. Otherwise:
//
//	2|<pending>|<out>|<shown>   version 2
//	<pending>, <out>:           id=since,id=since,…   (may be empty)
//	since:                      Unix ms, decimal
//	<shown>:                    flags,flags,…  (decimal, one per slot; may be empty)
//
// A State with a nil Shown is written in version 1, "1|<pending>|<out>";
// UnmarshalText reads both.
// Ids are room member ids ([A-Za-z0-9._:@-]), which never contain '|', ','
// or '='. The entries keep their order, so equal states encode equally.
func (s *State) AppendText(b []byte) ([]byte, error) {
	if s.Empty() && len(s.Shown) == 0 {
		return b, nil
	}
	if s.Shown == nil {
		b = append(b, stateVersionV1...)
	} else {
		b = append(b, stateVersion...)
	}
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
	if s.Shown == nil {
		return b, nil
	}
	b = append(b, '|')
	for i, f := range s.Shown {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(f), 10)
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
	s.Pending, s.Out, s.Shown = s.Pending[:0], s.Out[:0], nil
	if len(text) == 0 {
		return nil
	}
	str := string(text)
	ver, rest, ok := strings.Cut(str, "|")
	if !ok || (ver != stateVersion && ver != stateVersionV1) {
		return fmt.Errorf("%w: %.40q: want version %s or %s", ErrStateFormat, str, stateVersion, stateVersionV1)
	}
	pend, out, ok := strings.Cut(rest, "|")
	var shown string
	if ok && ver == stateVersion {
		out, shown, ok = strings.Cut(out, "|")
		if ok {
			s.Shown = []uint16{}
		}
	}
	if !ok || strings.Contains(out, "|") || strings.Contains(shown, "|") {
		return fmt.Errorf("%w: %.40q: want %s lists", ErrStateFormat, str, map[bool]string{true: "three", false: "two"}[ver == stateVersion])
	}
	if shown != "" {
		for f := range strings.SplitSeq(shown, ",") {
			v, err := strconv.ParseUint(f, 10, 16)
			if err != nil || strconv.FormatUint(v, 10) != f {
				return fmt.Errorf("%w: shown: entry %.40q is not a canonical decimal below 2^16", ErrStateFormat, f)
			}
			s.Shown = append(s.Shown, uint16(v))
		}
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
