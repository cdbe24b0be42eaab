package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

func TestLogRecordRoundTrip(t *testing.T) {
	want := []LogOp{
		{Kind: LogEvents, Value: []byte("events")},
		{Kind: LogSet, Key: []byte("sa"), Value: []byte("snap"), ExpiresAt: 1 << 40},
		{Kind: LogDelete, Key: []byte("ja\x00\x01")},
	}
	b := AppendLogHeader(nil)
	for _, op := range want {
		b = AppendLogOp(b, op.Kind, op.Key, op.Value, op.ExpiresAt)
	}
	got, err := DecodeLogRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d ops, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.ExpiresAt != w.ExpiresAt {
			t.Errorf("op %d = %+v, want %+v", i, g, w)
		}
	}
	if ops, err := DecodeLogRecord(AppendLogHeader(nil)); err != nil || len(ops) != 0 {
		t.Errorf("empty record = %v, %v", ops, err)
	}
}

func TestLogRecordCorrupt(t *testing.T) {
	good := AppendLogOp(AppendLogHeader(nil), LogSet, []byte("k"), []byte("v"), 0)
	for name, b := range map[string][]byte{
		"empty":      nil,
		"format":     append([]byte{formatWALV1}, good[1:]...),
		"kind":       AppendLogOp(AppendLogHeader(nil), 9, nil, nil, 0),
		"kind zero":  AppendLogOp(AppendLogHeader(nil), 0, nil, nil, 0),
		"truncated":  good[:len(good)-2],
		"no expiry":  good[:len(good)-1],
		"long value": append(AppendLogHeader(nil), LogSet, 1, 'k', 100, 'v'),
	} {
		if _, err := DecodeLogRecord(b); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("%s: DecodeLogRecord = %v, want ErrCorrupt", name, err)
		}
	}
}
