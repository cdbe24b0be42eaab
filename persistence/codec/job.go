package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// AppendJob appends the encoding of j to dst.
func AppendJob(dst []byte, j *persistence.Job) []byte {
	start := len(dst)
	dst = append(dst, formatJobV1)
	dst = binary.AppendUvarint(dst, j.ID)
	dst = append(dst, byte(j.State))
	dst = binary.AppendVarint(dst, j.Enqueued)
	dst = binary.AppendUvarint(dst, j.Slot)
	dst = binary.AppendVarint(dst, j.Deadline)
	dst = binary.AppendVarint(dst, j.Finished)
	dst = binary.AppendVarint(dst, j.ExpiresAt)
	dst = binary.AppendUvarint(dst, uint64(len(j.Payload)))
	dst = append(dst, j.Payload...)
	dst = binary.AppendUvarint(dst, uint64(len(j.Result)))
	dst = append(dst, j.Result...)
	return appendChecksum(dst, start)
}

// DecodeJob decodes a value written by AppendJob. The job's byte slices
// are copies. Any malformed input yields an error wrapping
// persistence.ErrCorrupt.
func DecodeJob(b []byte) (persistence.Job, error) {
	body, err := checkFrame(b, formatJobV1)
	if err != nil {
		return persistence.Job{}, err
	}
	d := decoder{b: body}
	var j persistence.Job
	j.ID = d.uvarint("job id")
	j.State = persistence.JobState(d.u8("job state"))
	j.Enqueued = d.varint("enqueued")
	j.Slot = d.uvarint("slot")
	j.Deadline = d.varint("deadline")
	j.Finished = d.varint("finished")
	j.ExpiresAt = d.varint("expiry")
	j.Payload = d.bytes("payload")
	j.Result = d.bytes("result")
	if err := d.finish(); err != nil {
		return persistence.Job{}, err
	}
	if j.ID == 0 || j.State < persistence.JobWaiting || j.State > persistence.JobDone {
		return persistence.Job{}, Corrupt("bad job id or state")
	}
	return j, nil
}

// bytes reads a length-prefixed byte string and returns a copy of it (nil
// when empty).
func (d *decoder) bytes(what string) []byte {
	n := d.count(what, 1)
	if n == 0 || d.err != nil {
		return nil
	}
	out := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return out
}
