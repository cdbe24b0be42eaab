package backup

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Errors of reading a backup. Match them with errors.Is.
var (
	// ErrNotBackup: the file does not start as a pinbot backup does.
	ErrNotBackup = errors.New("backup: not a pinbot backup")
	// ErrVersion: the file is a backup in a format this pinbot does not
	// read (a newer one).
	ErrVersion = errors.New("backup: unsupported backup format")
	// ErrCorrupt: the file is damaged or cut short: a checksum does not
	// match, or it ends early.
	ErrCorrupt = errors.New("backup: the file is corrupt or truncated")
	// ErrNoKey: the backup holds a token store, and no key was given to
	// decrypt it.
	ErrNoKey = errors.New("backup: the backup holds a token store: its encryption key is needed")
	// ErrKey: the key given is not the one the token store was encrypted
	// with when the backup was taken.
	ErrKey = errors.New("backup: the token store in the backup was encrypted with another key")
)

// Kind names the store a section holds.
type Kind byte

const (
	// Engine is the rate-limit engine's store (DIR/engine).
	Engine Kind = 'E'
	// Links is the token store (DIR/links).
	Links Kind = 'L'
)

// String names the store.
func (k Kind) String() string {
	switch k {
	case Engine:
		return "engine store"
	case Links:
		return "token store"
	}
	return fmt.Sprintf("section %q", byte(k))
}

const (
	magic         = "PINBOTBK"
	formatVersion = 1
	// maxHeader bounds the header's JSON.
	maxHeader = 64 << 10
	// chunkSize is the most data one chunk carries.
	chunkSize = 64 << 10
	// sealedOverhead is what sealing adds to a chunk's data: the flag
	// byte and GCM's tag.
	sealedOverhead = 1 + 16
	saltLen        = 32
	flagEncrypted  = 1
	endMark        = 'Z'
	// The flag byte that starts each sealed chunk.
	chunkData  = 0
	chunkFinal = 1
)

// hkdfInfo binds the derived key to its use.
const hkdfInfo = "pinbot backup v1: token store"

// Header describes a backup.
type Header struct {
	// Created is when the backup was taken, by the wall clock.
	Created time.Time `json:"created"`
	// Pinbot is the version of the pinbot that took it.
	Pinbot string `json:"pinbot"`
	// Online says whether the stores were in use by a running pinbot.
	Online bool `json:"online"`
	// HighWater is the engine store's high-water mark when the backup
	// began: the newest engine time (Unix ms) its state refers to.
	HighWater int64 `json:"engine_high_water"`
}

// SectionInfo describes one section of a backup.
type SectionInfo struct {
	Kind      Kind
	Encrypted bool
	// Size is the bytes of its chunks.
	Size int64
}

// Info describes a backup file.
type Info struct {
	Header
	// Version is the file's format version.
	Version  int
	Sections []SectionInfo
	// Size is the file's length, in bytes.
	Size int64
}

// Has reports whether the backup holds a section of kind k.
func (i Info) Has(k Kind) bool {
	for _, s := range i.Sections {
		if s.Kind == k {
			return true
		}
	}
	return false
}

// sectionAEAD returns the cipher of an encrypted section: AES-256-GCM
// under the key HKDF-SHA-256 derives from key and salt.
func sectionAEAD(key, salt []byte) (cipher.AEAD, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("backup: the key is %d bytes, want 16, 24 or 32", len(key))
	}
	k, err := hkdf.Key(sha256.New, key, salt, hkdfInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// chunkNonce returns the nonce of chunk i of a section.
func chunkNonce(dst []byte, i uint64) []byte {
	dst = append(dst[:0], 0, 0, 0, 0)
	return binary.BigEndian.AppendUint64(dst, i)
}

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
