package bot

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// movingTransport lets the first POST /v5/pins through, then, before its
// answer reaches the bot, plays a cluster member handing the account's
// partition over: the engine serves the account no more and its actors
// stop.
type movingTransport struct {
	moved  atomic.Bool
	engine atomic.Pointer[actors.Engine]
}

func (m *movingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.Method == http.MethodPost && req.URL.Path == pinteresttest.PathPins && !m.moved.Swap(true) {
		m.engine.Load().Drop(func(string) bool { return true })
	}
	return resp, err
}

// TestPinAccountMovesMidBatch: the account's partition moves to another
// member after the first picture of a batch: the rest is not attempted,
// and the reply says why and to try again, without calling the pin
// counter broken.
func TestPinAccountMovesMidBatch(t *testing.T) {
	mt := &movingTransport{}
	w := newWorld(t, worldOptions{
		pinterestHTTP: &http.Client{Transport: mt},
		engine: func(c *actors.Config) {
			c.Owner = func(string) ([]byte, error) {
				if mt.moved.Load() {
					return nil, actors.ErrNotOwner
				}
				return []byte("fence"), nil
			}
		},
	})
	mt.engine.Store(w.engine)
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 3, "three")
	text, _ := w.pin(alice, m.ID.String())
	// The pictures' pins overlap: the second may be reserved before the
	// first's answer came, so one or two are pinned before the move.
	must(t, text, msgMovedMidBatch, "skipped: not attempted: the account is moving between Pinbot's servers")
	mustNot(t, text, "pin counter is unavailable", "failed")
	pinned := strings.Count(text, "✅")
	if n := len(w.ps.PinsFor("1001")); pinned < 1 || pinned > 2 || n != pinned {
		t.Fatalf("%d pinned in the reply, %d pins on Pinterest; want the same, 1 or 2:\n%s", pinned, n, text)
	}
}
