// Package web serves rostrum's live page and its small HTTP API: the rooms
// of the environment, each room's stable top-N as the layout service shows
// it (one tile per slot) beside the raw top-N, and the processor's counters,
// updated in the browser through Server-Sent Events.
//
// Routes:
//
//	GET /                      the page (static files embedded, no build step)
//	GET /static/…              its HTML, CSS and JavaScript
//	GET /healthz               200 "ok" while the process serves HTTP
//	GET /readyz                200 "ok", or 503: a problem naming the reason's class (Config.Ready)
//	GET /metrics               Config.Metrics, when set
//	GET /v1/openapi.yaml       the OpenAPI document (docs/openapi.yaml)
//	GET /v1/rooms?limit=&offset=&q=  {"rooms":[{"room_id","seq","total_members"}…],"offset","limit","next_offset"}
//	GET /v1/rooms/{room}/top   {"room_id","seq","total_members","stable":[…],"raw":[…]}
//	GET /v1/events?room=ID&rooms=true  text/event-stream: "series", "room", "rooms" and "counters" events
//	GET /v1/boards                                   [{"name","kind","period","next_reset","windows","settles","half_life"}…]
//	GET /v1/boards/{name}/top?n=10&offset=0[&period=P][&window=W]
//	GET /v1/boards/{name}/members/{member}[?period=P][&window=W]
//	GET /v1/boards/{name}/members/{member}/around?n=5[&period=P][&window=W]
//	GET /v1/boards/{name}/settled?n=10&offset=0[&period=P]
//	GET /v1/boards/{name}/members?ids=a,b[&window=W]  a page of chosen members (members.go)
//	GET /v1/members/{id}[?boards=a,b]                 one member on many boards (members.go)
//	GET /v1/members/{id}/hints                        the member's hints (Config.Hints)
//	POST /v1/boards/{name}/members/{member}/remove[?settled=true]   bearer token (Config.AdminTokens)
//	    /v1/rooms/{room}/recording…, /v1/rooms/{room}/layout…   Config.Control, when set
//
// The board routes (boards.go, docs/DESIGN.md §8) read Config.Boards; a page is
// {"board","period","window","total_members","members":[{"member","rank",
// "total","reached_at"}…]}, ranks 1-based and unique. They answer 400 for a
// malformed parameter and 404 for an unknown board, period, window or member.
// The member routes (members.go) read many rankings through
// Boards.Standings, one Redis round trip whatever the number of boards, and
// evaluate Config.Hints on the same numbers; ids= takes at most
// board.MaxMembers ids (400 beyond).
//
// Every error answer is an RFC 9457 problem (internal/problem), 404 for a
// path no route takes and 405 for a method a route does not take (with
// Allow) included: 400 for a malformed room id, 404 for a room with no
// state in Redis, 503 redis-unavailable when Redis fails (its error text is
// logged, never sent). Writes (the remove route, the control routes) need
// "Content-Type: application/json": 415 otherwise.
//
// Serve (and ListenAndServe) run the server under internal/httpserve's
// limits (Config.Limits: header, read, write and idle timeouts, a header
// size limit) and serve HTTPS with Config.TLS; an event stream lifts its
// own write deadline. The guard (guard.go) applies the CORS policy, the
// per-client rate limit and the read tokens before any route.
//
// Config.HTTPMetrics (httpmetrics.go; by default Config.Metrics when it
// implements it, as metrics.Processor's handler does) counts every request by
// route pattern and status code, and times it, outside the guard: a refused
// request counts too. The route label is the ServeMux pattern, never the
// path, so no room or member id becomes a label; "other" when none matched.
// An event stream counts when it opens and is not timed.
//
// One poller (hub.go) reads the Source and the counters once per
// Config.Interval while at least one event stream is open, and hands the
// read to every stream; each stream sends a
// "room" event only when the room's JSON changed, a "counters" event only
// when the counters changed (with events and records per second computed on
// the server from the change since the previous poll), and a comment line
// when it sent nothing, so proxies keep the stream open. A "room" event also
// names the processor's stable strategy (Config.Stable.Strategy) and carries
// "merge": seed 003's merge of the raw lists this stream has read, so the page
// can switch a room's tiles between the published list and the merge
// and count the visible changes of both. A room with no
// state gives a "missing" event, a failed read an "unavailable" event with
// a problem naming the class of failure. Without ?room= the stream carries
// the counters (and with rooms=true the room list) only. However many streams
// are open, each shown room costs one read per interval, all of a poll's
// rooms one call (one pipelined round trip with a BatchSource, as
// sink.Store is); a room found missing is not read again until the room
// list, read for the streams that ask for it, names it. Streams are admitted up to Config.MaxStreams in all,
// MaxStreamsPerClient per client and MaxStreamRooms distinct rooms (429 or
// 503 problems with Retry-After beyond); a stream ends when its client
// goes away or Serve shuts down.
//
// The package never writes to Redis. It writes to Kafka in one place: the
// remove route (remove.go) produces a remove event through
// Config.Producer, guarded by Config.AdminTokens (403 without them, 401
// without a valid bearer token), and answers 202 {"id"} once the broker
// acknowledged it, 503 when it did not. The control routes are served by
// the handler given in Config.Control.
package web
