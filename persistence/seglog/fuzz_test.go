package seglog

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzRecovery damages a log's segments (changed bytes, a cut) and opens
// it again: Open either refuses with ErrCorrupt or reads back a prefix of
// the records written, intact, and the log then takes new records that a
// further Open reads after that prefix.
func FuzzRecovery(f *testing.F) {
	f.Add(uint8(5), []byte{0, 20, 0xff})
	f.Add(uint8(9), []byte{1, 3, 0x01, 0, 200, 0x80})
	f.Add(uint8(3), []byte{2, 40})
	f.Add(uint8(12), []byte{0, 100, 0x10, 1, 8, 0x01})
	f.Fuzz(func(t *testing.T, n uint8, damage []byte) {
		dir := t.TempDir()
		opts := Options{SegmentSize: 128, NoSync: true}
		l, err := Open(dir, opts, func(uint64, []byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		want := payloads(int(n % 16))
		for _, p := range want {
			if _, err := l.Append(p); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		segs := segFiles(t, dir)
		// damage is a list of (segment, offset, xor) triples; xor 0 cuts
		// the segment at offset.
		for ; len(damage) >= 3 && len(segs) > 0; damage = damage[3:] {
			path := segs[int(damage[0])%len(segs)]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				continue
			}
			off := int(damage[1]) % len(b)
			if damage[2] == 0 {
				b = b[:off]
			} else {
				b[off] ^= damage[2]
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var got [][]byte
		read := func(seq uint64, p []byte) error {
			got = append(got, bytes.Clone(p))
			return nil
		}
		l, err = Open(dir, opts, read)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want success or ErrCorrupt", err)
			}
			return
		}
		if len(got) > len(want) {
			t.Fatalf("read %d records, %d written", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("record %d = %q, want %q", i+1, got[i], want[i])
			}
		}
		prefix := len(got)
		if _, err := l.Append([]byte("new")); err != nil {
			t.Fatalf("Append after recovery: %v", err)
		}
		l.Close()
		got = nil
		l, err = Open(dir, opts, read)
		if err != nil {
			t.Fatalf("Open after recovery and Append: %v", err)
		}
		defer l.Close()
		if len(got) != prefix+1 || string(got[prefix]) != "new" {
			t.Fatalf("after recovery and Append: %d records, want %d ending in \"new\"", len(got), prefix+1)
		}
	})
}
