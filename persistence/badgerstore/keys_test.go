package badgerstore

import (
	"bytes"
	"testing"
)

func TestKeys(t *testing.T) {
	if got, want := appendSnapshotKey(nil, "123"), []byte("s123"); !bytes.Equal(got, want) {
		t.Errorf("snapshot key = %q, want %q", got, want)
	}
	wk := appendWALKey(nil, 0x0102030405060708)
	if want := []byte("w\x01\x02\x03\x04\x05\x06\x07\x08"); !bytes.Equal(wk, want) {
		t.Errorf("WAL key = %q, want %q", wk, want)
	}
	if seq, ok := walKeySeq(wk); !ok || seq != 0x0102030405060708 {
		t.Errorf("walKeySeq = %#x, %v", seq, ok)
	}
	if bytes.Compare(appendWALKey(nil, 255), appendWALKey(nil, 256)) >= 0 {
		t.Error("WAL keys do not sort by seq")
	}
	for _, bad := range []string{"w", "w\x00\x00\x00\x00\x00\x00\x00", "x\x00\x00\x00\x00\x00\x00\x00\x01", "w\x00\x00\x00\x00\x00\x00\x00\x01\x00"} {
		if seq, ok := walKeySeq([]byte(bad)); ok {
			t.Errorf("walKeySeq(%q) = %d, want malformed", bad, seq)
		}
	}
}
