package backup

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Reader reads a backup file, checking it as it goes: read each section
// (Next) to its end, which checks its checksum; Next returns io.EOF once
// the end of the file is checked too.
type Reader struct {
	br   *bufio.Reader
	sum  hash.Hash // of every byte read
	n    int64
	info Info
	sec  *Section
	buf  []byte
}

// corrupt returns an error wrapping ErrCorrupt that says what is wrong.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// NewReader reads and checks the start of a backup from r.
func NewReader(r io.Reader) (*Reader, error) {
	br := &Reader{br: bufio.NewReaderSize(r, 64<<10), sum: sha256.New(), buf: make([]byte, chunkSize+sealedOverhead)}
	start := make([]byte, len(magic)+2+4)
	if _, err := io.ReadFull(br.br, start); err != nil || string(start[:len(magic)]) != magic {
		return nil, ErrNotBackup
	}
	br.hash(start)
	v := binary.BigEndian.Uint16(start[len(magic):])
	if v != formatVersion {
		return nil, fmt.Errorf("%w: version %d, this pinbot reads version %d", ErrVersion, v, formatVersion)
	}
	n := binary.BigEndian.Uint32(start[len(magic)+2:])
	if n > maxHeader {
		return nil, corrupt("a header of %d bytes", n)
	}
	body := make([]byte, int(n)+sha256.Size)
	if err := br.read(body); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(body[:n]); !bytes.Equal(sum[:], body[n:]) {
		return nil, corrupt("the header's checksum does not match")
	}
	if err := json.Unmarshal(body[:n], &br.info.Header); err != nil {
		return nil, corrupt("unreadable header: %v", err)
	}
	br.info.Version = int(v)
	return br, nil
}

// hash records p as read.
func (r *Reader) hash(p []byte) {
	r.sum.Write(p)
	r.n += int64(len(p))
}

// read fills p; a file that ends first is corrupt.
func (r *Reader) read(p []byte) error {
	if _, err := io.ReadFull(r.br, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corrupt("the file ends early, after %d bytes", r.n)
		}
		return fmt.Errorf("backup: read: %w", err)
	}
	r.hash(p)
	return nil
}

// Info returns what the file says of itself: its header, and the
// sections and size read so far (all of them once Next returned io.EOF).
func (r *Reader) Info() Info {
	info := r.info
	info.Sections = append([]SectionInfo(nil), r.info.Sections...)
	info.Size = r.n
	return info
}

// Next returns the next section, once the one before is read to its end
// (Next skips what is left of it, checking its checksum without
// decrypting it), or io.EOF after the last one, once the file's end and
// checksum are checked.
func (r *Reader) Next() (*Section, error) {
	if r.sec != nil {
		if err := r.sec.Skip(); err != nil {
			return nil, err
		}
		r.info.Sections = append(r.info.Sections, SectionInfo{Kind: r.sec.Kind, Encrypted: r.sec.Encrypted, Size: r.sec.size})
		r.sec = nil
	}
	var head [2]byte
	if err := r.read(head[:1]); err != nil {
		return nil, err
	}
	if head[0] == endMark {
		want := r.sum.Sum(nil)
		got := make([]byte, sha256.Size)
		if err := r.read(got); err != nil {
			return nil, err
		}
		if !bytes.Equal(got, want) {
			return nil, corrupt("the file's checksum does not match")
		}
		if _, err := r.br.Peek(1); err != io.EOF {
			return nil, corrupt("bytes follow the end of the backup")
		}
		return nil, io.EOF
	}
	if err := r.read(head[1:]); err != nil {
		return nil, err
	}
	k := Kind(head[0])
	if k != Engine && k != Links {
		return nil, corrupt("unknown section %q", head[0])
	}
	for _, s := range r.info.Sections {
		if s.Kind == k {
			return nil, corrupt("a second %v", k)
		}
	}
	if head[1]&^flagEncrypted != 0 {
		return nil, corrupt("%v: unknown flags %#x", k, head[1])
	}
	s := &Section{Kind: k, Encrypted: head[1]&flagEncrypted != 0, r: r, sum: sha256.New()}
	s.sum.Write(head[:])
	if s.Encrypted {
		s.salt = make([]byte, saltLen)
		if err := r.read(s.salt); err != nil {
			return nil, err
		}
		s.sum.Write(s.salt)
	}
	r.sec = s
	return s, nil
}

// Section is one section of a backup being read. Read returns its data
// and io.EOF at its end, once its size and checksum are checked.
type Section struct {
	Kind      Kind
	Encrypted bool

	r       *Reader
	salt    []byte
	aead    cipher.AEAD
	nonce   []byte
	idx     uint64
	sum     hash.Hash
	size    int64
	pending []byte
	final   bool // the last sealed chunk was read
	done    bool // the section's end was read and checked
	err     error
}

// Unlock sets the key an encrypted section is decrypted with: the key of
// the token store it was taken from. Read fails with ErrNoKey without it.
func (s *Section) Unlock(key []byte) error {
	switch {
	case !s.Encrypted:
		return nil
	case len(key) == 0:
		return ErrNoKey
	}
	aead, err := sectionAEAD(key, s.salt)
	if err != nil {
		return err
	}
	s.aead = aead
	return nil
}

// chunk reads the next chunk. At the section's end it checks the size
// and checksum and returns end true.
func (s *Section) chunk() (payload []byte, end bool, err error) {
	var lb [4]byte
	if err := s.r.read(lb[:]); err != nil {
		return nil, false, err
	}
	n := binary.BigEndian.Uint32(lb[:])
	if n == 0 {
		tail := make([]byte, 8+sha256.Size)
		if err := s.r.read(tail); err != nil {
			return nil, false, err
		}
		if size := binary.BigEndian.Uint64(tail); size != uint64(s.size) {
			return nil, false, corrupt("%v: %d bytes, the section says %d", s.Kind, s.size, size)
		}
		if !bytes.Equal(tail[8:], s.sum.Sum(nil)) {
			return nil, false, corrupt("%v: the checksum does not match", s.Kind)
		}
		return nil, true, nil
	}
	if n > uint32(len(s.r.buf)) {
		return nil, false, corrupt("%v: a chunk of %d bytes", s.Kind, n)
	}
	payload = s.r.buf[:n]
	if err := s.r.read(payload); err != nil {
		return nil, false, err
	}
	s.sum.Write(payload)
	s.size += int64(n)
	return payload, false, nil
}

// Read reads the section's data.
func (s *Section) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		switch {
		case s.err != nil:
			return 0, s.err
		case s.done:
			return 0, io.EOF
		case s.Encrypted && s.aead == nil:
			return 0, ErrNoKey
		}
		payload, end, err := s.chunk()
		switch {
		case err != nil:
			s.err = err
			continue
		case end && s.Encrypted && !s.final:
			s.err = corrupt("%v: its last chunk is missing", s.Kind)
			continue
		case end:
			s.done = true
			continue
		case s.final:
			s.err = corrupt("%v: a chunk follows the last one", s.Kind)
			continue
		case !s.Encrypted:
			s.pending = payload
			continue
		}
		s.nonce = chunkNonce(s.nonce, s.idx)
		s.idx++
		pt, err := s.aead.Open(payload[:0], s.nonce, payload, []byte{byte(s.Kind)})
		if err != nil {
			// Another key, or a damaged chunk: the checksum tells which.
			if err := s.skipRest(); err != nil {
				s.err = err
			} else {
				s.err = ErrKey
			}
			continue
		}
		switch {
		case len(pt) == 1 && pt[0] == chunkFinal:
			s.final = true
		case len(pt) > 1 && pt[0] == chunkData:
			s.pending = pt[1:]
		default:
			s.err = corrupt("%v: a malformed chunk", s.Kind)
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// skipRest reads the section's remaining chunks without decrypting them,
// checking its size and checksum.
func (s *Section) skipRest() error {
	s.pending = nil
	for {
		_, end, err := s.chunk()
		if err != nil {
			return err
		}
		if end {
			s.done = true
			return nil
		}
	}
}

// Skip reads what is left of the section without decrypting it, checking
// its size and checksum.
func (s *Section) Skip() error {
	switch {
	case s.err != nil:
		return s.err
	case s.done:
		return nil
	}
	if err := s.skipRest(); err != nil {
		s.err = err
		return err
	}
	return nil
}

// Verify reads a whole backup from r and checks it: its format, every
// checksum, and, with the token store's key, that every chunk of the
// encrypted section decrypts. Without a key the encrypted section's
// checksums are checked alone. It returns what the file holds.
func Verify(r io.Reader, key []byte) (Info, error) {
	br, err := NewReader(r)
	if err != nil {
		return Info{}, err
	}
	for {
		sec, err := br.Next()
		if errors.Is(err, io.EOF) {
			return br.Info(), nil
		}
		if err != nil {
			return br.Info(), err
		}
		if sec.Encrypted && key == nil {
			continue // Next checks its checksums
		}
		if err := sec.Unlock(key); err != nil {
			return br.Info(), err
		}
		if _, err := io.Copy(io.Discard, sec); err != nil {
			return br.Info(), err
		}
	}
}
