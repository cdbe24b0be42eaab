// Package codec is the byte encoding of every value a persistence store
// keeps: account snapshots, journal events, the write-ahead-log records
// of persistence/badgerstore, the high-water mark, the clock anchor and
// the engine's rules.
// The formats are in one package because they share one frame and one
// space of format bytes, and because the in-memory test store
// (persistence/persistencetest) keeps its values encoded exactly as the
// Badger store does. Key layout is the Badger store's business, not this
// package's.
//
// Every value starts with a format byte and ends with a CRC-32 (Castagnoli)
// of everything before it, little-endian:
//
//	value = format, body..., crc32c(format, body...) [4 bytes]
//
// The high nibble of the format byte names the kind of value and the low
// nibble its encoding version, so a value stored under the wrong kind of key
// is rejected as corrupt rather than misread. Bodies are varints
// (encoding/binary): unsigned fields as uvarints, times and deltas between
// times as zigzag varints, so that any Go value of the types round-trips
// exactly, including out-of-order or negative times. Decoders accept only
// minimal varints and no trailing bytes, so every value has exactly one
// encoding, and they never retain their input.
//
// Event body (format 0x11), kept one per value by the test-only MemStore;
// the Badger store keeps events in WAL records with the same fields:
//
//	Seq uvarint, Kind byte, ID uvarint, Count uvarint,
//	At varint, Deadline-At varint
//
// A typical reservation event is about 20 bytes.
//
// Snapshot body (format 0x21):
//
//	Seq uvarint, NextID uvarint,
//	len(Committed) uvarint, Committed[0] varint, Committed[i]-Committed[i-1] varint...,
//	len(Pending) uvarint, then for each pending reservation p:
//	  p.ID-prevID varint, p.ReservedAt-prevAt varint, p.Deadline-p.ReservedAt varint
//
// where prevID starts at zero and prevAt at the last committed time (zero
// if none), and both then follow the previous pending reservation.
//
// Committed times are ascending and at most 12 hours apart, so each delta
// takes 1 to 4 bytes: a snapshot of 100 pins spaced minutes apart takes
// about 300 bytes instead of the 800 that fixed-width times would need.
//
// Snapshot body (format 0x22): the V1 body, then HoldUntil as a varint,
// never zero (a snapshot without a hold is always written as V1, so each
// snapshot has one encoding).
//
// Snapshot body (format 0x23): the V1 body, then HoldUntil as a varint
// (zero when there is no hold), len(Lapsed) as a uvarint, never zero, and
// for each lapsed reservation l: l.ID-prevID varint, l.Deadline-prevAt
// varint, where prevID starts at zero and prevAt at the last committed
// time (zero if none), and both then follow the previous one. A snapshot
// without lapsed reservations is written as V1 or V2.
//
// Snapshot body (format 0x24): the V3 body, except that len(Lapsed) may
// be zero, then Rebuilt as a varint, never zero. A snapshot whose Rebuilt
// is zero is written as V1, V2 or V3.
//
// High-water body (format 0x31): the mark as a zigzag varint.
//
// WAL record body (format 0x41):
//
//	record seq uvarint, account count uvarint, then per account:
//	  len(account) uvarint, account bytes, ExpiresAt seconds uvarint,
//	  event count uvarint, then per event:
//	    Seq uvarint, Kind byte, ID uvarint, Count uvarint,
//	    At varint, Deadline-At varint
//
// Clock anchor body (format 0x51): len(BootID) uvarint, BootID bytes,
// Uptime varint, Engine varint.
//
// Job body (format 0x61): ID uvarint, State byte, Enqueued varint, Slot
// uvarint, Deadline varint, Finished varint, ExpiresAt varint,
// len(Payload) uvarint, Payload bytes, len(Result) uvarint, Result bytes.
//
// Rules body (format 0x71), the limits the engine enforces:
//
//	Current rule, Lease varint, len(Earlier) uvarint, Earlier rules...
//
// where each rule is Limit varint, Window varint, Until varint.
//
// Rules body (format 0x72): as 0x71, each rule followed by From varint;
// used only when some rule's From is not zero (else 0x71).
//
// Journal log record (format 0x81, without a checksum: the log checksums
// its records): changes one after the other, each Kind byte, len(Key)
// uvarint, Key bytes, len(Value) uvarint, Value bytes, ExpiresAt uvarint.
//
// Differences of int64 values are computed with wrapping arithmetic, which
// the decoder undoes with the same wrapping, so extreme values round-trip.
package codec
