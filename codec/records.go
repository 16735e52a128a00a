package codec

// The record contract of rostrum's topics (docs/DESIGN.md §2, docs/topics/):
// every record rostrum produces on its output, DLQ, settled-board,
// recording-command and layout topics carries two headers,
//
//	content-type    application/json
//	rostrum-schema  <record kind>/<major version>, e.g. ranking.topn/1
//
// Within a major version fields may be added, never removed or changed in
// meaning; consumers must ignore fields they do not know. A change that
// removes a field or changes its meaning takes the next major version, and
// the published JSON Schema of that version (docs/schemas/) gets a file of
// its own. A record kind is its topic's name after "{env}.", the last word
// made singular: the kind names one record, the topic the stream of them.
//
// These are names only, shared by the packages that build records
// (processor, control, dlq) without their importing one another.

// Header names.
const (
	// HeaderContentType names the media type of a record's value.
	HeaderContentType = "content-type"
	// HeaderSchema names the record kind and major version of a record.
	HeaderSchema = "rostrum-schema"
	// HeaderTraceparent names the W3C trace context of a record
	// (https://www.w3.org/TR/trace-context/): on a callback record the
	// gateway's request's (or a new trace's), on an output or DLQ record a
	// hop of the same trace as the callback it came from (docs/tracing.md).
	// Optional: a record without it starts no trace.
	HeaderTraceparent = "traceparent"

	// The DLQ envelope (docs/topics/dlq.md): why and where from a record
	// was rejected.
	HeaderError     = "rostrum-error"     // the one-line reason
	HeaderTopic     = "rostrum-topic"     // the topic it was consumed from
	HeaderPartition = "rostrum-partition" // its partition there, decimal
	HeaderOffset    = "rostrum-offset"    // its offset there, decimal

	// Redrives (`rostrum dlq redrive`): on a redriven record and on the DLQ
	// copy of one rejected again, the DLQ record it came from
	// ("dlq-topic/partition/offset"); on a marker, the DLQ record it marks
	// ("partition/offset") and where it went ("topic/partition/offset").
	HeaderRedrivenFrom = "rostrum-redriven-from"
	HeaderRedriveOf    = "rostrum-redrive-of"
	HeaderRedrivenTo   = "rostrum-redriven-to"
)

// ContentTypeJSON is the value of HeaderContentType on every record rostrum
// produces. On a DLQ record it is the type the rejected value was sent as:
// its bytes are kept as received, and the reason says why they were
// refused, which may be that they are not JSON.
const ContentTypeJSON = "application/json"

// Record kinds and their major versions, the values of HeaderSchema.
const (
	SchemaTopN     = "ranking.topn/1"      // {env}.ranking.topn: a room's stable top-N (Output)
	SchemaDLQ      = "callbacks.dlq/1"     // {env}.callbacks.dlq: the envelope of a rejected record or a redrive marker
	SchemaSettled  = "boards.settled/1"    // {env}.boards.settled: a board's settled period
	SchemaCommand  = "recording.command/1" // {env}.recording.commands: a recording start or stop
	SchemaLayout   = "rooms.layout/1"      // {env}.rooms.layout: a room's layout parameters
	SchemaCallback = "callbacks.event/1"   // {env}.callbacks.{rtc,client,signal}: one event or an array of them (producers may set it; rostrum reads no header)
)
