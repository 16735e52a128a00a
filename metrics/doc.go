// Package metrics is rostrum's Prometheus instrumentation. Processor holds
// the processor's measurements (it implements the processor's Observer, so
// the processor itself never imports Prometheus) and the consumer group's lag,
// in a registry of its own that Handler serves at /metrics next to the Go
// runtime (go_*) and process (process_*) metrics.
//
// # Conventions
//
// Every rostrum metric is named rostrum_…, uses base units (seconds, records),
// ends in _total when it is a counter, and carries the constant label env, the
// environment served (--env). Labels are bounded: topic (an input topic),
// partition, op, kind and reason (a short rule class such as "ts" or "json").
// No label holds a room or user id. Names lists every metric name; a
// dashboard and tests depend on them, so renaming one is a breaking change.
//
// # Metrics
//
//	rostrum_records_consumed_total{topic}          counter, records
//	    Records polled from an input topic, DLQ ones included.
//	rostrum_events_applied_total{topic}            counter, events
//	    Callback events decoded, accepted and applied to Redis.
//	rostrum_dlq_records_total{topic,reason}        counter, records
//	    Records sent to {env}.callbacks.dlq, by the rule they broke.
//	rostrum_events_ignored_total{topic,type}       counter, events
//	    Well-formed events of a type rostrum does not rank on, skipped
//	    (--unknown-types skip); the first 32 types by name, later ones as other.
//	rostrum_batch_records                          histogram, records
//	    Records per completed batch (buckets 1 … 10000).
//	rostrum_batch_duration_seconds                 histogram, seconds
//	    Start of a batch to its commit, retries and backoff included.
//	rostrum_redis_roundtrip_seconds{op}            histogram, seconds
//	    One pipelined Redis round trip: apply (state, ranking) or store (stable lists).
//	rostrum_wal_append_seconds                     histogram, seconds
//	    One write-ahead log append of a batch, fsync included.
//	rostrum_wal_fsync_seconds                      histogram, seconds
//	    One write-ahead log fsync (wal.Config.OnSync = ObserveFsync).
//	rostrum_outputs_published_total                counter, records
//	    Stable top-N records published, republished pending ones included.
//	rostrum_stable_conflicts_total                 counter, rooms
//	    Stable-list compare-and-sets lost to another writer, merged again.
//	rostrum_batch_retries_total                    counter, attempts
//	    Failed batch attempts retried (Redis or Kafka failing).
//	rostrum_rebalances_total{kind}                 counter, callbacks
//	    Rebalance callbacks that moved partitions: assigned, revoked, lost.
//	rostrum_assigned_partitions                    gauge, partitions
//	    Input partitions this instance owns now.
//	rostrum_redis_resets_total                     counter, resets
//	    Times Redis had lost its data and the state was rebuilt.
//	rostrum_fetch_paused                           gauge, 0 or 1
//	    1 while input fetching is paused because a batch keeps failing.
//	rostrum_board_events_total{result}             counter, events
//	    Leaderboard events counted, or skipped as a repeated id (duplicate).
//	rostrum_board_saturated_total                  counter, updates
//	    Board score updates whose total passed the board's max-total.
//	rostrum_board_gaps_closed_total                counter, gaps
//	    Gaps between a board's applied offset ranges closed (64 at most).
//	rostrum_state_cache_members                    gauge, members
//	    Member states held by the sink's state cache.
//	rostrum_state_cache_applies_total{path}        counter, room applies
//	    Room applies by path: merged, fast, full; stale plans redone in full.
//	rostrum_consumer_lag_records{topic,partition}  gauge, records
//	    End offset − committed offset.
//	rostrum_consumer_lag_seconds{topic,partition}  gauge, seconds
//	    Age of the oldest uncommitted record; 0 when the lag is 0.
//	rostrum_consumer_group_lag_records             gauge, records
//	    The sum of rostrum_consumer_lag_records over the partitions.
//	rostrum_consumer_group_lag_seconds             gauge, seconds
//	    The largest rostrum_consumer_lag_seconds.
//	rostrum_publish_latency_seconds                histogram, seconds
//	    Kafka timestamp of a room's oldest record in a batch to the broker's
//	    acknowledgement of the room's output record (PublishLatency).
//	rostrum_build_info{version,revision,goversion} gauge, always 1
//	    The running build (BuildInfo).
//	rostrum_http_requests_total{route,code}        counter, requests
//	rostrum_http_request_duration_seconds{route}   histogram, seconds
//	    The HTTP API's requests by route pattern ("other": none matched), an
//	    event stream counted when it opens and not timed (HTTPRequest,
//	    HTTPDuration; Handler passes them to a web.Server).
//	rostrum_redis_pool_connections                 gauge, connections
//	rostrum_redis_pool_idle_connections            gauge, connections
//	rostrum_redis_pool_hits_total                  counter, checkouts
//	rostrum_redis_pool_misses_total                counter, checkouts
//	rostrum_redis_pool_timeouts_total              counter, checkouts
//	rostrum_redis_pool_stale_connections_total     counter, connections
//	    The Redis client's connection pool, read at each scrape (WatchRedisPool).
//
// KafkaClientHooks adds franz-go's own client metrics (the kprom plugin),
// named kgo_…: connections, bytes and errors per broker, batches and
// records produced and fetched per topic.
//
// The op children (apply, store) and kind children (assigned, revoked, lost)
// exist at zero from the start, and WatchLag creates the topic children of the
// consumed and applied counters, so that rate() sees their first increase.
//
// # Consumer lag
//
// WatchLag measures the lag of the consumer group from Kafka every few
// seconds, whichever instance holds the partitions: records lag is the end
// offset (high watermark) minus the committed offset, or minus the log start
// when the partition has no commit. Seconds lag is exact, not interpolated:
// it is the time now minus the timestamp of the record at the committed
// offset, read from Kafka (the first record after it when retention or
// compaction removed that one). The timestamp is the producer's create time
// unless the topic uses log-append time, so a producer's clock skew shows in
// it; a timestamp in the future counts as age 0. Transaction markers count in
// records lag, but a partition whose lag is only markers, or whose uncommitted
// records retention removed entirely, has age 0.
//
// Every instance exports the whole group's lag, so aggregate across
// instances with max, never sum:
//
//	max by (topic, partition) (rostrum_consumer_lag_records)
//	max(rostrum_consumer_group_lag_seconds) > 60
//
// When a measurement fails the gauges keep their last values and the failure
// is logged (one line per measurement); a partition that disappears (a
// deleted topic) loses its series.
package metrics
