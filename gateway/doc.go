// Package gateway is rostrum's HTTP front door for callbacks: it turns each
// POST /v1/callbacks/{rtc|client|signal} into Kafka records of the callback
// topics of the room's environment, passed through unchanged, and answers
// 202 only once the brokers acknowledged every record of the request.
//
// Invariants:
//
//   - Pass-through: each object's bytes reach Kafka exactly as received. A
//     body that is one object becomes one record holding those bytes; an
//     array becomes one record per room holding that room's objects in
//     their order, joined by "," inside "[" "]" (Split).
//   - It checks only what routing needs: well-formed JSON, the size limit,
//     and a room_id string of the id syntax in every object (Parse). Types
//     rostrum does not rank on pass too.
//   - Durable before 2xx: the records are produced with acks=all by an
//     idempotent producer, and 202 is written only after every record of
//     the request was acknowledged. A request is never partly accepted: if
//     any record fails, the answer is an error (a client retry may then
//     write the records that did land a second time: at-least-once).
//   - Order per room: a room is one key, so one partition, and one
//     idempotent producer keeps a partition's records in the order they
//     were produced; a client that waits for each answer before it sends
//     the room's next request finds the records of its 2xx answers in
//     that order (a failed request's records that landed after all may be
//     anywhere in between). TestGatewayNo2xxWithoutAck checks it under
//     produce errors and delays.
//   - Credentials before resources: a request is judged on its headers
//     (a bearer token; a signature only when a secret is configured; in
//     the timestamped mode a timestamp within MaxSkew) before it takes an
//     in-flight slot or a byte of its body is read, and a 401 on the
//     headers closes the connection. A signed request reads its body, within
//     ReadTimeout, in a pool of its own, so signatures that will not verify
//     never hold the in-flight slots (credentials.go).
//   - No broker text in answers: a failed produce is logged with the
//     request id; the answer names the class (503, 413) only.
//   - Routing: a route.Table maps each room to an environment; the record
//     goes to {prefix}{env}.callbacks.{source}, keyed by the room id, with
//     the headers below. A room no rule routes is a 422 and nothing of the
//     request is written.
//
// Record headers:
//
//	+----------------------+-------------------------------------------+
//	| rostrum-source       | rtc, client or signal (from the path)     |
//	| rostrum-received-at  | when the request arrived, Unix ms, decimal |
//	| rostrum-request-id   | the request's id (X-Request-Id)           |
//	| traceparent          | the request's W3C traceparent, or a new   |
//	|                      | trace (trace.go)                          |
//	+----------------------+-------------------------------------------+
//
// The contract (status codes, bodies, authentication) is docs/DESIGN.md §11.
package gateway
