// Package wal is rostrum's write-ahead log: every batch of Kafka records the
// processor consumes is appended here, as one checksummed frame, and made
// durable before anything is applied to Redis, so that a crash, or a Redis that
// lost its data, can be recovered by replaying the log.
//
// # Invariants
//
//   - A batch is one frame: after a crash it is readable whole or not at all.
//   - Sequence numbers start at 1 and grow by exactly one per Append, across
//     segments; a gap, a bad checksum or an undecodable frame that valid data
//     follows is reported as a *CorruptionError with its segment and offset and
//     is never skipped.
//   - Only the tail of the last segment can be torn (a crash in the middle of a
//     write). Open truncates such a tail, fsyncs the truncation and logs the
//     segment, the offset and the number of bytes dropped.
//   - A frame never spans two segments. A segment other than the last one is
//     complete and fsynced before the next one is created, whatever the
//     SyncPolicy.
//   - One process at a time: Open takes an exclusive flock on dir/LOCK.
//     Inspect reads without the lock and never writes.
//
// # Durability contract
//
// With SyncEveryAppend (the default) Append returns only after the frame has
// been written with a single write(2) and the segment fsynced: an acknowledged
// batch survives a process kill and a power loss. With SyncNone Append returns
// once the frame is in the operating system's page cache: it survives a
// process kill but not a power loss, after which Open drops the lost tail.
// Segment creation and deletion fsync the directory. Close fsyncs the active
// segment whatever the policy.
//
// # Disk faults
//
// The segments live on an FS (Config.FS; the operating system's by
// default), so tests can fail writes, fsyncs, directory fsyncs, truncations
// and file creation. A failed Append never leaves its batch in the log and
// never makes the log unusable; the caller retries the same batch:
//
//   - A failed write (ENOSPC, EIO; part of the frame may have reached the
//     file) or fsync makes the active segment's tail unknown. Append returns
//     the error without acknowledging the batch, and the segment is
//     repaired, at once and, if that fails too, at the start of the next
//     Append: the descriptor that failed is closed, the segment opened
//     afresh, truncated back to its last complete frame and fsynced. The
//     next Append then writes the whole frame again, with the same
//     sequence number, and fsyncs it.
//   - An fsync that failed is never retried and trusted. After a failed
//     fsync Linux may have dropped the dirty pages, or marked them clean
//     while they never reached the disk, and a second fsync then reports
//     success for data that is not there (PostgreSQL's "fsyncgate", 2018;
//     etcd and PostgreSQL since treat it as fatal). Truncating the frame
//     away and writing it again puts it on new dirty pages, which the next
//     fsync must write out or fail on. Frames acknowledged before the
//     failure were fsynced by successful fsyncs and are not touched.
//   - A failed rotation (fsync of the old segment, creation of the new one,
//     the write or fsync of its header, the directory fsync) leaves the old
//     segment active and removes the half-made one; the next attempt creates
//     it, and fsyncs the directory, afresh.
//   - A crash while the disk fails leaves at most a torn or unacknowledged
//     last frame, which Open truncates (torn) or keeps (a whole frame of a
//     batch that was never acknowledged: harmless, a replay through the
//     watermarks is idempotent). Readers (Replay, Inspect) never read past
//     the last complete frame.
//
// With SyncNone frames are not fsynced when appended, so a failed fsync at
// a rotation or at Close may concern frames already acknowledged; like a
// power loss, that is the risk SyncNone accepts.
//
// # On-disk format
//
// A log is a directory of segment files plus the lock file:
//
//	dir/LOCK                  flock target, empty
//	dir/0000000000000001.wal  segment holding seqs 1..k
//	dir/00000000000000a4.wal  segment holding seqs k+1.. (k+1 = 0xa4)
//
// A segment is named by the first sequence it holds (16 lowercase hex digits),
// created with O_CREATE|O_EXCL, then the directory is fsynced. All integers
// are little-endian. A segment starts with a 20-byte header:
//
//	+--------+------+---------+----------------------------------------------+
//	| offset | size | field   | meaning                                      |
//	+--------+------+---------+----------------------------------------------+
//	|      0 |    4 | magic   | "RWAL"                                       |
//	|      4 |    2 | version | format version, 1                            |
//	|      6 |    2 | flags   | reserved, 0                                  |
//	|      8 |    8 | first   | first sequence of the segment (= file name)  |
//	|     16 |    4 | crc     | CRC-32C (Castagnoli) of bytes 0..15          |
//	+--------+------+---------+----------------------------------------------+
//
// followed by frames, back to back, one per batch:
//
//	+--------+------+----------+---------------------------------------------+
//	| offset | size | field    | meaning                                     |
//	+--------+------+----------+---------------------------------------------+
//	|      0 |    4 | length   | n, bytes after the crc (20 <= n < 256 MiB)  |
//	|      4 |    4 | crc      | CRC-32C (Castagnoli) of bytes 8..8+n-1      |
//	|      8 |    8 | seq      | sequence number, >= 1                       |
//	|     16 |    8 | appended | append time, Unix milliseconds (int64)      |
//	|     24 |    4 | count    | number of records                           |
//	|     28 |    … | records  | count records, as below                     |
//	+--------+------+----------+---------------------------------------------+
//
// and a record is
//
//	+------+-----------+----------------------------------------------------+
//	| size | field     | meaning                                            |
//	+------+-----------+----------------------------------------------------+
//	|    2 | topic len | t, bytes of the topic name                         |
//	|    t | topic     | topic name                                         |
//	|    4 | partition | Kafka partition (int32)                            |
//	|    8 | offset    | Kafka offset (int64)                               |
//	|    8 | timestamp | record timestamp, Unix milliseconds (int64)        |
//	|    4 | key len   | k, bytes of the key (0: no key)                    |
//	|    k | key       | record key                                         |
//	|    4 | value len | v, bytes of the value                              |
//	|    v | value     | record value, as received                          |
//	+------+-----------+----------------------------------------------------+
//
// The records must fill the frame exactly. Fixed-width integers keep every
// frame's encoding unique, so a decoded frame re-encodes to the same bytes.
//
// # Recovery
//
// Open reads every segment in order, verifies each header and frame checksum,
// decodes every frame and checks that sequences are contiguous. When a frame
// at offset o is bad (short, absurd length, checksum mismatch, undecodable
// body) Open looks for a valid frame after it: a frame whose checksum matches
// and whose sequence is plausible at that distance from o. If there is one,
// or if the bad frame is not in the last segment, Open fails with a
// *CorruptionError and changes nothing. Otherwise the bytes from o on are a
// torn tail (a partial write, a zero-filled block after a power loss, garbage)
// and are truncated. A last segment of zero bytes or with a torn header (a
// crash during rotation) gets its header rewritten.
//
// A header with another format version is an error, never a torn tail: a
// newer rostrum's log is not truncated by an older one.
package wal
