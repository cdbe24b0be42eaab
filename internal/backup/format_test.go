package backup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	testKey  = bytes.Repeat([]byte{0x5a}, 32)
	otherKey = bytes.Repeat([]byte{0x33}, 32)
	testHead = Header{Created: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC), Pinbot: "test", HighWater: 42}
)

// randomBytes returns n reproducible bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// makeFile writes a backup holding engine in the clear and links
// encrypted with key (no token store when links is nil).
func makeFile(t *testing.T, engine, links, key []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHead)
	if err != nil {
		t.Fatal(err)
	}
	put := func(k Kind, data, key []byte) {
		s, err := w.Section(k, key)
		if err != nil {
			t.Fatal(err)
		}
		// In uneven pieces, as a Badger stream writes.
		for len(data) > 0 {
			n := min(len(data), 1000+len(data)%7777)
			if _, err := s.Write(data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put(Engine, engine, nil)
	if links != nil {
		put(Links, links, key)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != int64(buf.Len()) {
		t.Fatalf("Written() = %d, wrote %d", w.Written(), buf.Len())
	}
	return buf.Bytes()
}

// readAll reads every section of file with key.
func readAll(file, key []byte) (map[Kind][]byte, Info, error) {
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		return nil, Info{}, err
	}
	out := map[Kind][]byte{}
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Info(), nil
		}
		if err != nil {
			return nil, Info{}, err
		}
		if err := s.Unlock(key); err != nil {
			return nil, Info{}, err
		}
		b, err := io.ReadAll(s)
		if err != nil {
			return nil, Info{}, err
		}
		out[s.Kind] = b
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 7} {
		engine, links := randomBytes(1, n), randomBytes(2, n)
		file := makeFile(t, engine, links, testKey)
		got, info, err := readAll(file, testKey)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got[Engine], engine) || !bytes.Equal(got[Links], links) {
			t.Fatalf("%d bytes: read back other data", n)
		}
		if n > 16 && bytes.Contains(file, links[:16]) {
			t.Fatalf("%d bytes: the token store's data is in the file in the clear", n)
		}
		if info.Version != 1 || !info.Created.Equal(testHead.Created) || info.Pinbot != "test" || info.HighWater != 42 ||
			info.Size != int64(len(file)) || len(info.Sections) != 2 || !info.Has(Engine) || !info.Has(Links) ||
			info.Sections[0].Encrypted || !info.Sections[1].Encrypted {
			t.Fatalf("%d bytes: Info = %+v", n, info)
		}
		vi, err := Verify(bytes.NewReader(file), testKey)
		if err != nil || vi.Size != info.Size || len(vi.Sections) != 2 {
			t.Fatalf("%d bytes: Verify = %+v, %v", n, vi, err)
		}
	}
}

func TestFormatKeys(t *testing.T) {
	file := makeFile(t, randomBytes(1, 5000), randomBytes(2, 3*chunkSize), testKey)
	if _, err := Verify(bytes.NewReader(file), otherKey); !errors.Is(err, ErrKey) {
		t.Errorf("Verify with another key: %v, want ErrKey", err)
	}
	if _, err := Verify(bytes.NewReader(file), nil); err != nil {
		t.Errorf("Verify without a key (checksums only): %v", err)
	}
	if _, _, err := readAll(file, nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("reading the token store without a key: %v, want ErrNoKey", err)
	}
	if _, err := Verify(bytes.NewReader(file), []byte("short")); err == nil {
		t.Error("Verify with a 5-byte key succeeded")
	}
}

// TestFormatDamage: every truncation, every changed byte and every byte
// added at the end is refused, as damage (or, in the first bytes, as not
// a backup), never taken for another key.
func TestFormatDamage(t *testing.T) {
	file := makeFile(t, randomBytes(1, 300), randomBytes(2, 200), testKey)
	refused := func(what string, f []byte) {
		t.Helper()
		_, err := Verify(bytes.NewReader(f), testKey)
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotBackup) && !errors.Is(err, ErrVersion) {
			t.Fatalf("%s: Verify = %v, want ErrCorrupt", what, err)
		}
	}
	for n := range len(file) {
		refused(fmt.Sprintf("cut to %d bytes", n), file[:n])
	}
	for i := range file {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			f := bytes.Clone(file)
			f[i] ^= x
			refused(fmt.Sprintf("byte %d changed", i), f)
		}
	}
	refused("a byte added", append(bytes.Clone(file), 0))
	refused("a section dropped", dropLinks(t, file))
}

// dropLinks returns file without its token store's section, its end
// kept: the file's checksum no longer matches.
func dropLinks(t *testing.T, file []byte) []byte {
	t.Helper()
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil { // skips the engine's section
		t.Fatal(err)
	}
	cut := int(r.Info().Size) - 2 - saltLen // the start of the token store's section
	out := bytes.Clone(file[:cut])
	return append(out, file[len(file)-1-32:]...)
}
