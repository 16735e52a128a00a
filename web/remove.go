package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/problem"
)

// CallbackProducer sends one record to the environment's client callback
// topic ({env}.callbacks.client) and returns once the broker acknowledged
// it, or with the error that kept it from doing so.
type CallbackProducer interface {
	ProduceCallback(ctx context.Context, key, value []byte) error
}

// removeJSON is the answer of the remove route: the id of the remove
// event the broker acknowledged.
type removeJSON struct {
	ID string `json:"id"`
}

// boardRemove serves POST /v1/boards/{name}/members/{member}/remove
// [?settled=true]: it produces a remove event for the member
// (boarddef.Board.RemoveRecord) and answers 202 with its id once the broker
// acknowledged it. The processors apply it in its partition's order like
// any callback; the answer does not wait for that.
//
//	403  forbidden: no admin token file configured (Config.AdminTokens nil)
//	401  unauthorized: no valid bearer token
//	415  unsupported-media-type: no "Content-Type: application/json"
//	404  unknown board
//	400  malformed member or settled
//	503  unavailable: the broker did not acknowledge (the event may still
//	     arrive; a second removal of the same member is harmless)
//
// The route takes no body, yet it requires the JSON content type like
// every write of the API: a browser sends that type cross-site only after
// a CORS preflight, which a page of another origin does not pass, so no
// form of another site can call it.
func (s *Server) boardRemove(w http.ResponseWriter, r *http.Request) {
	if s.opt.AdminTokens == nil {
		problem.Write(w, http.StatusForbidden, problem.Forbidden, "board administration disabled: start rostrum with --admin-token-file", nil)
		return
	}
	if !s.opt.AdminTokens.Allow(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rostrum boards"`)
		problem.Write(w, http.StatusUnauthorized, problem.Unauthorized, "missing or invalid bearer token", nil)
		return
	}
	if !problem.RequireJSON(w, r) {
		return
	}
	if !s.haveBoards(w) || !s.validMember(w, r.PathValue("member")) {
		return
	}
	name := r.PathValue("name")
	b, ok := s.opt.Boards.Board(name)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorJSON{boarddef.ErrUnknownBoard.Error() + " " + name})
		return
	}
	var settled bool
	switch v := r.URL.Query().Get("settled"); v {
	case "", "false":
	case "true":
		settled = true
	default:
		writeJSON(w, http.StatusBadRequest, errorJSON{"settled must be true or false, got " + strconv.Quote(v)})
		return
	}
	key, value, id, err := b.RemoveRecord(r.PathValue("member"), settled, time.Now())
	if err != nil {
		if errors.Is(err, boarddef.ErrBadParam) {
			writeJSON(w, http.StatusBadRequest, errorJSON{err.Error()})
			return
		}
		s.fail(w, r, err)
		return
	}
	if s.opt.Producer == nil {
		problem.Write(w, http.StatusServiceUnavailable, problem.Unavailable, "no producer configured for remove events", nil)
		return
	}
	if err := s.opt.Producer.ProduceCallback(r.Context(), key, value); err != nil {
		// The cause (a Kafka error, with broker addresses) is logged, never sent.
		s.lg.Warn("board remove not acknowledged", zap.String("board", name), zap.String("id", id), zap.Error(err))
		problem.Write(w, http.StatusServiceUnavailable, problem.Unavailable,
			"the brokers did not acknowledge the remove event "+id+"; retry (a second removal is harmless)", nil)
		return
	}
	// One line per removal: an audit trail of who was taken off which board.
	s.lg.Info("board remove produced", zap.String("board", name), zap.String("member", r.PathValue("member")),
		zap.Bool("settled", settled), zap.String("id", id))
	writeJSON(w, http.StatusAccepted, removeJSON{ID: id})
}
