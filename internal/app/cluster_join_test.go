package app

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/logtest"
)

// TestClusterJoinRetried: a member built while etcd is down keeps trying
// to join, logging each failure, and joins once etcd is back; without
// Join one failed try ends Build; Join ending stops the tries.
func TestClusterJoinRetried(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	etcd.Stop(0)
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()

	t.Run("once without Join", func(t *testing.T) {
		cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), "m0")
		cfg.Cluster.DialTimeout = 200 * time.Millisecond
		if a, err := Build(cfg); err == nil {
			a.Close(context.Background())
			t.Fatal("Build joined a cluster whose etcd is down")
		}
	})

	t.Run("until Join ends", func(t *testing.T) {
		join, cancel := context.WithCancelCause(context.Background())
		cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), "m0")
		cfg.Cluster.DialTimeout = 200 * time.Millisecond
		cfg.Cluster.Join = join
		logs := newWatchedLog("joining the cluster failed")
		cfg.Log = zerolog.New(logs)
		done := make(chan error, 1)
		go func() {
			a, err := Build(cfg)
			if a != nil {
				a.Close(context.Background())
			}
			done <- err
		}()
		select {
		case <-logs.seen:
		case err := <-done:
			t.Fatalf("Build ended without trying again: %v", err)
		}
		stop := errors.New("stop signal")
		cancel(stop)
		if err := <-done; !errors.Is(err, stop) {
			t.Fatalf("Build after Join ended: %v, want the cause %v", err, stop)
		}
	})

	t.Run("joins once etcd is back", func(t *testing.T) {
		cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), "m1")
		cfg.Cluster.DialTimeout = 200 * time.Millisecond
		cfg.Cluster.Join = t.Context()
		logs := newWatchedLog("joining the cluster failed")
		cfg.Log = zerolog.New(logs)
		type built struct {
			a   *App
			err error
		}
		done := make(chan built, 1)
		go func() {
			a, err := Build(cfg)
			done <- built{a, err}
		}()
		select {
		case <-logs.seen:
		case b := <-done:
			t.Fatalf("Build ended without trying again: %v", b.err)
		}
		etcd.Restart(0)
		b := <-done
		if b.err != nil {
			t.Fatalf("Build once etcd is back: %v", b.err)
		}
		defer b.a.Close(context.Background())
		if !strings.Contains(logs.String(), `"attempt":1`) {
			t.Errorf("the failed try is not logged with its attempt:\n%s", logs.String())
		}
	})
}

// watchedLog is a log that closes seen at the first line holding want.
type watchedLog struct {
	logtest.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func newWatchedLog(want string) *watchedLog {
	return &watchedLog{want: want, seen: make(chan struct{})}
}

func (w *watchedLog) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return w.Buffer.Write(p)
}
