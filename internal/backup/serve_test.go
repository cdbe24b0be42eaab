package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
)

// serve serves h on a control socket in a new directory and returns its
// path; the server stops when the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pinbot.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return path
}

// TestOnlineBackupWhileWriting: backups fetched from the control socket
// while the engine grants and the token store links, each restored: every
// grant acknowledged before the backup began is in it, none that was not
// yet asked for is, and the token store holds every link made before.
func TestOnlineBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Minute)
	clock := actors.NewManualClock(t0)
	cfg := engineConfig(clock, 1<<16, time.Hour)
	src := openDataDir(t, t.TempDir(), cfg)
	path := serve(t, Handler(Stores{Engine: src.store, Links: src.links, Key: testKey}, zerolog.Nop()))

	const accounts = 8
	var granted [accounts]atomic.Int64 // acknowledged grants, per account
	var asked [accounts]atomic.Int64   // grants asked for, per account
	var linked atomic.Int64
	progress := make(chan struct{}, 1) // a grant or a link was made
	tick := func() {
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range accounts {
		wg.Go(func() {
			acct := fmt.Sprintf("acct-%d", i)
			for {
				select {
				case <-stop:
					return
				default:
				}
				asked[i].Add(1)
				g, err := src.eng.Reserve(ctx, acct, 1)
				if err != nil || g.Granted != 1 {
					t.Errorf("Reserve(%s): %+v, %v", acct, g, err)
					return
				}
				granted[i].Add(1)
				tick()
				if _, err := src.eng.Commit(ctx, g.Reservations()[0], src.eng.Now()); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for n := int64(1); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprint("p", n)
			if err := src.links.Link(ctx, fmt.Sprint("u", n), links.Account{ID: id}, token(id)); err != nil {
				t.Errorf("Link: %v", err)
				return
			}
			linked.Store(n)
			tick()
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()

	for b := range 3 {
		// Each backup begins after more grants and links.
		for granted[0].Load() < int64(50*(b+1)) || linked.Load() < int64(5*(b+1)) {
			select {
			case <-progress:
			case <-time.After(10 * time.Second):
				t.Fatalf("backup %d: no grant or link for 10 s", b)
			}
		}
		var before [accounts]int64
		for i := range before {
			before[i] = granted[i].Load()
		}
		links := linked.Load()
		var buf bytes.Buffer
		if _, err := Fetch(ctx, path, &buf); err != nil {
			t.Fatalf("backup %d: Fetch: %v", b, err)
		}
		var after [accounts]int64
		for i := range after {
			after[i] = asked[i].Load()
		}
		dir, res := restoreInto(t, buf.Bytes(), cfg)
		if !res.Info.Online {
			t.Errorf("backup %d: the header says offline", b)
		}
		dst := openDataDir(t, dir, cfg)
		for i := range accounts {
			st := dst.status(fmt.Sprintf("acct-%d", i))
			if int64(st.Used) < before[i] || int64(st.Used) > after[i] {
				t.Fatalf("backup %d: acct-%d restored with %d used; %d grants acknowledged before the backup, %d asked for by its end",
					b, i, st.Used, before[i], after[i])
			}
		}
		for n := int64(1); n <= links; n++ {
			if _, _, err := dst.links.Grant(ctx, fmt.Sprint("p", n)); err != nil {
				t.Fatalf("backup %d: link %d of %d made before it: %v", b, n, links, err)
			}
		}
		dst.close()
	}
}

// TestFetchNotServing: no socket, or one a stopped pinbot left, is
// ErrNotServing; Listen replaces the latter, and refuses to replace what
// is not a socket.
func TestFetchNotServing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "pinbot.sock")
	var buf bytes.Buffer
	if _, err := Fetch(ctx, path, &buf); !errors.Is(err, ErrNotServing) {
		t.Errorf("Fetch without a socket: %v, want ErrNotServing", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // as a killed process leaves it
	if _, err := Fetch(ctx, path, &buf); !errors.Is(err, ErrNotServing) {
		t.Errorf("Fetch from a stale socket: %v, want ErrNotServing", err)
	}
	if buf.Len() != 0 {
		t.Errorf("Fetch wrote %d bytes", buf.Len())
	}
	ln, err = Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ln.Close()
	if fi, err := os.Lstat(path); err == nil {
		t.Errorf("the socket %v stays after Close", fi.Mode())
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil {
		t.Error("Listen replaced a regular file")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("Listen changed a regular file")
	}
}

// TestListenMode: only the socket's owner may connect.
func TestListenMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pinbot.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %04o, want 0600", perm)
	}
}
