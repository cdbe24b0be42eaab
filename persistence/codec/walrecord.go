package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// WALEntry is the part of a WAL record about one account.
type WALEntry struct {
	Account   string
	ExpiresAt uint64 // Unix seconds, 0: never
	Events    []persistence.Event
}

// AppendWALRecord appends to dst the encoding of the WAL record seq holding
// entries.
func AppendWALRecord(dst []byte, seq uint64, entries []WALEntry) []byte {
	start := len(dst)
	dst = append(dst, formatWALV1)
	dst = binary.AppendUvarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		dst = binary.AppendUvarint(dst, uint64(len(e.Account)))
		dst = append(dst, e.Account...)
		dst = binary.AppendUvarint(dst, e.ExpiresAt)
		dst = binary.AppendUvarint(dst, uint64(len(e.Events)))
		for _, ev := range e.Events {
			dst = appendEventBody(dst, ev)
		}
	}
	return appendChecksum(dst, start)
}

// WALEventLen bounds the encoded size of one event in a WAL record.
const WALEventLen = 1 + 5*binary.MaxVarintLen64

// WALEntryLen bounds the encoded size of an entry, and WALEntryLen(a, 0)
// that of its header.
func WALEntryLen(account string, events int) int {
	return 3*binary.MaxVarintLen64 + len(account) + events*WALEventLen
}

// DecodeWALRecord decodes a value written by AppendWALRecord. Any
// malformed input, an account that persistence.ValidAccount rejects and an
// event with Seq 0 included, yields an error wrapping
// persistence.ErrCorrupt.
func DecodeWALRecord(b []byte) (seq uint64, entries []WALEntry, err error) {
	body, err := checkFrame(b, formatWALV1)
	if err != nil {
		return 0, nil, err
	}
	d := decoder{b: body}
	seq = d.uvarint("record seq")
	n := d.count("account count", 4)
	entries = make([]WALEntry, 0, n)
	for range n {
		alen := d.count("account length", 1)
		if d.err != nil {
			break
		}
		acct := d.b[:alen]
		d.b = d.b[alen:]
		if !persistence.ValidAccount(acct) {
			d.fail("account")
			break
		}
		e := WALEntry{Account: string(acct), ExpiresAt: d.uvarint("expiry")}
		ne := d.count("event count", 6) // the shortest event: six one-byte fields
		e.Events = make([]persistence.Event, 0, ne)
		for range ne {
			ev := d.event()
			if ev.Seq == 0 {
				d.fail("event seq")
			}
			if d.err != nil {
				break
			}
			e.Events = append(e.Events, ev)
		}
		if d.err != nil {
			break
		}
		entries = append(entries, e)
	}
	if err := d.finish(); err != nil {
		return 0, nil, err
	}
	return seq, entries, nil
}
