package problem

import (
	"mime"
	"net/http"
	"strings"
)

// Handler returns h with every error answer that h writes as plain text
// rewritten as a problem of the status's code (CodeFor): an
// http.ServeMux's 404 for a path no pattern matches and its 405 for a
// method no pattern of the path takes (with its Allow header), an
// http.FileServer's 404, http.Error anywhere (net/http/pprof's). The text
// is not sent: it may carry what a handler meant for its log. Answers h
// writes as problems, as JSON or with a status below 400 pass through
// untouched, and so do streams (the writer keeps Flush and deadlines
// through http.ResponseController).
//
// Wrap the outermost handler of a listener, so that no route of it
// answers text/plain. Errors net/http writes before any handler runs (431
// for headers over the limit, 400 for a malformed request line) stay
// plain text.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&rewriter{ResponseWriter: w, r: r}, r)
	})
}

// rewriter turns a plain-text error answer into a problem at WriteHeader
// and drops the text that follows.
type rewriter struct {
	http.ResponseWriter
	r       *http.Request
	wrote   bool // the header went out
	dropped bool // the answer was replaced: swallow the body
}

func (w *rewriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if status >= 400 && plain(w.Header().Get("Content-Type")) {
		w.dropped = true
		h := w.Header()
		h.Del("X-Content-Type-Options") // http.Error's, for its text
		Write(w.ResponseWriter, status, CodeFor(status), detailFor(w.r, status), nil)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rewriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.dropped {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// deadlines) through the rewriter.
func (w *rewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// plain reports whether an answer of content type ct is plain text (or
// has no type yet, as a ServeMux's error has before http.Error sets it).
func plain(ct string) bool {
	return ct == "" || strings.HasPrefix(ct, "text/plain")
}

// detailFor says what was wrong, without echoing the request's path.
func detailFor(r *http.Request, status int) string {
	switch status {
	case http.StatusNotFound:
		return "no such route"
	case http.StatusMethodNotAllowed:
		return "method " + r.Method + " is not allowed on this route; Allow lists those that are"
	}
	return ""
}

// RequireJSON answers 415 unsupported-media-type, and returns false, when
// r does not say "Content-Type: application/json" (parameters such as
// charset aside). Every write of the HTTP surfaces requires it, body or
// not: a browser sends a form (application/x-www-form-urlencoded,
// multipart/form-data, text/plain) to another origin without asking, but
// a JSON request only after a CORS preflight the other origin must pass,
// so no page of another site can make a write.
func RequireJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return true
	}
	w.Header().Set("Accept", "application/json") // RFC 9110 §15.5.16: the types it takes
	Write(w, http.StatusUnsupportedMediaType, UnsupportedMedia, "send Content-Type: application/json", nil)
	return false
}
