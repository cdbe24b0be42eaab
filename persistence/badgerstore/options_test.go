package badgerstore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

func TestOpenBadgerRejectsOptions(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		opts    Options
		message string
	}{
		{"key length", "x", Options{InMemory: true, EncryptionKey: make([]byte, 20)}, "Options.EncryptionKey is 20 bytes"},
		{"negative memtable", "", Options{InMemory: true, MemTableSize: -1}, "Options.MemTableSize -1 is negative"},
		{"tiny memtable", "", Options{InMemory: true, MemTableSize: 4096}, "Options.MemTableSize 4096 is below 1 MiB"},
		{"negative block cache", "", Options{InMemory: true, BlockCacheSize: -1}, "Options.BlockCacheSize"},
		{"negative index cache", "", Options{InMemory: true, IndexCacheSize: -1}, "Options.IndexCacheSize"},
		{"no dir", "", Options{}, "badgerstore: open badger: empty directory"},
	}
	for _, tt := range tests {
		s, err := Open(tt.dir, tt.opts, zerolog.Nop())
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.message) || !strings.HasPrefix(err.Error(), "badgerstore: ") {
			t.Errorf("%s: Open = %v, want error containing %q", tt.name, err, tt.message)
		}
	}
}

// TestDurableMeansSyncWrites: the crash tests kill with SIGKILL, which
// keeps the page cache, so none of them can notice a Write that returns
// before fsync. Check the option that makes it durable directly.
func TestDurableMeansFdatasync(t *testing.T) {
	for _, durable := range []bool{true, false} {
		opts := testOptions()
		opts.Durable = durable
		s := openStore(t, t.TempDir(), opts)
		if s.db.Opts().SyncWrites {
			t.Errorf("Durable=%v: Badger SyncWrites on; the journal's log makes writes durable", durable)
		}
		if got := s.journal.Synced(); got != durable {
			t.Errorf("Durable=%v: journal fdatasyncs = %v", durable, got)
		}
	}
}

func TestBadgerEncryptionAtRest(t *testing.T) {
	const secret = "SECRETACCOUNT1234"
	key := bytes.Repeat([]byte{0x5a}, 32)
	tests := []struct {
		name    string
		key     []byte
		visible bool
	}{
		{"plain", nil, true}, // shows that the check can fail
		{"AES-128", key[:16], false},
		{"AES-256", key, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions()
			opts.Durable, opts.EncryptionKey = true, tt.key
			s, err := Open(dir, opts, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			want := persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}, Events: []persistence.Event{reserve(2, 2, t1)}}
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
				Account: secret, Snapshot: &want.Snapshot, Events: want.Events,
			}}})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := grepDir(t, dir, secret); got != tt.visible {
				t.Errorf("account ID visible on disk = %v, want %v", got, tt.visible)
			}

			// Another key, or none where one was used, is refused clearly.
			wrong := bytes.Repeat([]byte{0xa5}, 16)
			if tt.key == nil {
				wrong = key
			}
			for _, k := range [][]byte{wrong, nil} {
				if bytes.Equal(k, tt.key) {
					continue
				}
				opts.EncryptionKey = k
				if s, err := Open(dir, opts, zerolog.Nop()); !errors.Is(err, ErrEncryptionKey) {
					if err == nil {
						s.Close()
					}
					t.Errorf("open with key %x = %v, want ErrEncryptionKey", k, err)
				}
			}

			// The right key still opens it: the failed opens released it.
			opts.EncryptionKey = tt.key
			s = openStore(t, dir, opts)
			checkLoaded(t, s, secret, want)
		})
	}
}

// grepDir reports whether any file under dir contains s.
func grepDir(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		found, err = readerContains(f, []byte(s))
		return err
	})
	if err != nil {
		t.Fatalf("grep %s: %v", dir, err)
	}
	return found
}

// readerContains reports whether r contains pattern, reading in chunks.
func readerContains(r io.Reader, pattern []byte) (bool, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 0, 2<<20)
	chunk := make([]byte, 1<<20)
	for {
		n, err := br.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, pattern) {
			return true, nil
		}
		if keep := len(pattern) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}
