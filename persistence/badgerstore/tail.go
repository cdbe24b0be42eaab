package badgerstore

import (
	"encoding/binary"
	"slices"

	"github.com/pinbot/pinbot/persistence"
)

// tail is one account's events not yet folded into a snapshot, ascending
// by Seq, as the WAL index keeps them in memory. An account without any
// has no tail in the index.
//
// An active account holds up to Config.SnapshotEvery events here, so they
// are kept encoded, each as differences from the one before it (a few
// bytes a field instead of the 56 bytes of a tailEvent): Seq, record,
// expiry, ID and time change little from one event of an account to the
// next.
//
// A tail is not safe for simultaneous use; the index's locks order its
// readers and writers.
type tail struct {
	buf  []byte
	n    int
	last tailBase // the newest event's values, the base of the next one's
}

// tailBase holds the fields of an event that the next one is encoded
// against.
type tailBase struct {
	seq, rec, id uint64
	at           int64
	exp          uint32
}

func (b *tailBase) set(te *tailEvent) {
	*b = tailBase{seq: te.Seq, rec: te.rec, id: te.ID, at: te.At, exp: te.exp}
}

// Flags of an encoded event: which of the fields that are zero in most
// events follow.
const (
	tailHasDeadline = 1 << iota
	tailHasCount
)

// push appends te. An event older than the newest (never from the
// engine) is put in its place; events with equal Seq keep their order.
func (t *tail) push(te tailEvent) {
	if t.n > 0 && te.Seq < t.last.seq {
		evs := t.all()
		i, _ := slices.BinarySearchFunc(evs, te.Seq+1, func(e tailEvent, seq uint64) int {
			if e.Seq < seq {
				return -1
			}
			return 1
		})
		evs = slices.Insert(evs, i, te)
		t.set(evs)
		return
	}
	t.append(&te)
}

// append encodes te after the newest event, whose Seq it must not be
// below.
func (t *tail) append(te *tailEvent) {
	var base tailBase
	if t.n > 0 {
		base = t.last
	}
	b := t.buf
	b = binary.AppendUvarint(b, te.Seq-base.seq)
	b = binary.AppendVarint(b, int64(te.rec-base.rec))
	b = binary.AppendVarint(b, int64(te.exp)-int64(base.exp))
	var flags byte
	if te.Deadline != 0 {
		flags |= tailHasDeadline
	}
	if te.Count != 0 {
		flags |= tailHasCount
	}
	b = append(b, byte(te.Kind), flags)
	b = binary.AppendVarint(b, int64(te.ID-base.id))
	b = binary.AppendVarint(b, te.At-base.at)
	if flags&tailHasDeadline != 0 {
		b = binary.AppendVarint(b, te.Deadline-te.At)
	}
	if flags&tailHasCount != 0 {
		b = binary.AppendUvarint(b, uint64(te.Count))
	}
	t.buf = b
	t.n++
	t.last.set(te)
}

// tailIter decodes a tail's events in order. It allocates nothing: a
// callback taking a pointer to each decoded event would make every event
// escape to the heap, a tailEvent per event each time a write plans,
// applies or purges.
type tailIter struct {
	b    []byte
	left int
	base tailBase
	te   tailEvent // the event next decoded
}

// iter returns an iterator over t's events; t must not change while it is
// used.
func (t *tail) iter() tailIter { return tailIter{b: t.buf, left: t.n} }

// next decodes the next event into it.te and reports whether there was one.
func (it *tailIter) next() bool {
	if it.left == 0 {
		return false
	}
	it.left--
	it.te = tailEvent{}
	it.b = decodeTailEvent(it.b, &it.base, &it.te)
	it.base.set(&it.te)
	return true
}

// decodeTailEvent decodes the event at the start of b, encoded against
// base, into te and returns the rest of b. The bytes come from append in
// the same process: they are never malformed.
func decodeTailEvent(b []byte, base *tailBase, te *tailEvent) []byte {
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	te.Seq = base.seq + uv()
	te.rec = base.rec + uint64(sv())
	te.exp = uint32(int64(base.exp) + sv())
	te.Kind = persistence.EventKind(b[0])
	flags := b[1]
	b = b[2:]
	te.ID = base.id + uint64(sv())
	te.At = base.at + sv()
	if flags&tailHasDeadline != 0 {
		te.Deadline = te.At + sv()
	}
	if flags&tailHasCount != 0 {
		te.Count = uint32(uv())
	}
	return b
}

// all returns the events, decoded, as a new slice.
func (t *tail) all() []tailEvent {
	return t.appendAll(make([]tailEvent, 0, t.n))
}

// appendAll appends the events, decoded, to dst.
func (t *tail) appendAll(dst []tailEvent) []tailEvent {
	for it := t.iter(); it.next(); {
		dst = append(dst, it.te)
	}
	return dst
}

// set replaces the events with evs, ascending by Seq. The buffer is given
// back when evs need much less of it: a tail shrinks at every snapshot,
// and the buffer it grew to would otherwise stay with it.
func (t *tail) set(evs []tailEvent) {
	buf := t.buf[:0]
	*t = tail{buf: buf}
	for i := range evs {
		t.append(&evs[i])
	}
	if c := cap(t.buf); c >= 64 && len(t.buf) <= c/4 {
		t.buf = slices.Clip(append([]byte(nil), t.buf...))
	}
}

// filter keeps the events for which keep returns true and calls drop, if
// not nil, with each other one. scratch is reused for the decoded events
// and returned, to be passed again.
func (t *tail) filter(scratch []tailEvent, keep func(te *tailEvent) bool, drop func(te *tailEvent)) []tailEvent {
	evs := t.appendAll(scratch[:0])
	kept := evs[:0]
	for i := range evs {
		if keep(&evs[i]) {
			kept = append(kept, evs[i])
		} else if drop != nil {
			drop(&evs[i])
		}
	}
	if len(kept) < len(evs) {
		t.set(kept)
	}
	return evs
}
