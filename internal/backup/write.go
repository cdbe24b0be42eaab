package backup

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Writer writes a backup file. Write the sections one at a time (Section,
// then Close on it), then Close the Writer.
type Writer struct {
	w   io.Writer
	sum hash.Hash // of every byte written
	n   int64
	sec *SectionWriter
	err error
}

// NewWriter writes the start of a backup, with h, to w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	body, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("backup: header: %w", err)
	}
	bw := &Writer{w: w, sum: sha256.New()}
	start := make([]byte, 0, len(magic)+2+4+len(body)+sha256.Size)
	start = append(start, magic...)
	start = binary.BigEndian.AppendUint16(start, formatVersion)
	start = binary.BigEndian.AppendUint32(start, uint32(len(body)))
	start = append(start, body...)
	hs := sha256.Sum256(body)
	start = append(start, hs[:]...)
	if err := bw.write(start); err != nil {
		return nil, err
	}
	return bw, nil
}

// write writes p to the file; its error sticks.
func (w *Writer) write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(p)
	w.sum.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("backup: write: %w", err)
	}
	return w.err
}

// Written returns how many bytes were written to the file.
func (w *Writer) Written() int64 { return w.n }

// Section starts a section holding the store of kind k, encrypted with a
// key derived from key unless key is nil. Its data is written to the
// returned SectionWriter, which must be closed before the next section.
func (w *Writer) Section(k Kind, key []byte) (*SectionWriter, error) {
	if w.sec != nil && !w.sec.closed {
		return nil, errors.New("backup: a section is open")
	}
	sw := &SectionWriter{w: w, kind: k, sum: sha256.New(), buf: make([]byte, 0, chunkSize)}
	head := []byte{byte(k), 0}
	if key != nil {
		salt := make([]byte, saltLen)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
		aead, err := sectionAEAD(key, salt)
		if err != nil {
			return nil, err
		}
		sw.aead = aead
		head[1] = flagEncrypted
		head = append(head, salt...)
	}
	if err := w.write(head); err != nil {
		return nil, err
	}
	sw.sum.Write(head) // a damaged salt reads as damage, not as another key
	w.sec = sw
	return sw, nil
}

// Close ends the file. It fails if a section is still open.
func (w *Writer) Close() error {
	if w.sec != nil && !w.sec.closed {
		return errors.New("backup: close: a section is open")
	}
	if err := w.write([]byte{endMark}); err != nil {
		return err
	}
	return w.write(w.sum.Sum(nil))
}

// SectionWriter writes the data of one section in chunks.
type SectionWriter struct {
	w      *Writer
	kind   Kind
	aead   cipher.AEAD // nil: not encrypted
	idx    uint64      // next chunk's index
	buf    []byte      // data not yet written
	scr    []byte      // a chunk as written
	nonce  []byte
	sum    hash.Hash
	size   int64
	closed bool
}

// Write adds p to the section.
func (s *SectionWriter) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errors.New("backup: write to a closed section")
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunkSize-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(s.buf) == chunkSize {
			if err := s.flush(chunkData); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flush writes the buffered data as a chunk; flag is the flag byte of a
// sealed chunk.
func (s *SectionWriter) flush(flag byte) error {
	payload := s.buf
	if s.aead != nil {
		pt := append(s.scr[:0], flag)
		pt = append(pt, s.buf...)
		s.nonce = chunkNonce(s.nonce, s.idx)
		payload = s.aead.Seal(pt[:0], s.nonce, pt, []byte{byte(s.kind)})
		s.scr = payload
	}
	s.idx++
	s.buf = s.buf[:0]
	if err := s.w.write(binary.BigEndian.AppendUint32(nil, uint32(len(payload)))); err != nil {
		return err
	}
	if err := s.w.write(payload); err != nil {
		return err
	}
	s.sum.Write(payload)
	s.size += int64(len(payload))
	return nil
}

// Size returns how many bytes of chunks the section holds so far.
func (s *SectionWriter) Size() int64 { return s.size }

// Close writes what is buffered, the end of the section and its size and
// checksum.
func (s *SectionWriter) Close() error {
	if s.closed {
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.flush(chunkData); err != nil {
			return err
		}
	}
	if s.aead != nil {
		if err := s.flush(chunkFinal); err != nil {
			return err
		}
	}
	tail := binary.BigEndian.AppendUint32(nil, 0)
	tail = binary.BigEndian.AppendUint64(tail, uint64(s.size))
	tail = s.sum.Sum(tail)
	if err := s.w.write(tail); err != nil {
		return err
	}
	s.closed = true
	return nil
}
