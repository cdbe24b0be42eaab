package bot

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/internal/discordio/discordiotest"
)

// fakePeers stands for the cluster between a member that serves no
// account (the front, w.bot) and the member that owns them all (owner):
// Forward calls the owner's HandlePeer in process, with faults.
type fakePeers struct {
	mu     sync.Mutex
	owner  *Bot
	here   map[string]bool // accounts the front serves itself
	refuse int             // refuse this many calls before any work
	always bool            // refuse every call (no owner)
	lose   bool            // the owner works, its answer is lost
	calls  int
	// onRefuse, when set, runs after each refusal.
	onRefuse func(p *fakePeers)
}

func (p *fakePeers) Serves(account string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.here[account]
}

func (p *fakePeers) Forward(ctx context.Context, account, method string, body []byte) ([]byte, error) {
	p.mu.Lock()
	p.calls++
	refuse := p.always || p.refuse > 0
	if p.refuse > 0 {
		p.refuse--
	}
	lose, owner, onRefuse := p.lose, p.owner, p.onRefuse
	p.mu.Unlock()
	if refuse {
		if onRefuse != nil {
			onRefuse(p)
		}
		return nil, fmt.Errorf("%w: partition moving", ErrNotForwarded)
	}
	ans, err := owner.HandlePeer(ctx, method, body)
	if lose {
		return nil, errors.New("connection reset after the request was sent")
	}
	return ans, err
}

func (p *fakePeers) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// forwardWorld is a world whose bot serves no account and forwards /pin
// to a second bot over the same Discord, links, engine and Pinterest.
func forwardWorld(t *testing.T) (*fakeWorld, *fakePeers) {
	t.Helper()
	peers := &fakePeers{here: map[string]bool{}}
	w := newFakeWorld(t, func(o *worldOptions) { o.peers = peers })
	w.bot.forwardPatience = 300 * time.Millisecond
	owner, err := newBot(Config{
		Token:       base64.RawStdEncoding.EncodeToString([]byte(w.dc.AppID().String())) + ".x.y",
		Engine:      w.engine,
		Links:       w.links,
		Pinterest:   w.pc,
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Now:         w.pclock.Now,
		NoUserRate:  true,
		DigestClock: w.digests,
	}, w.dc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	peers.owner = owner
	return w, peers
}

func TestForwardPin(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(2, "Two cats")

	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, "Pinterest account @alicepins, board **Board of alicepins**: 2 pinned.", "12-hour pin count: 2/100")
	if n := peers.count(); n != 1 {
		t.Fatalf("%d forwards, want 1", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", n)
	}

	// The message command travels with its target message.
	one := w.images(1, "A dog")
	text = w.run(w.dc.MessageCommand(w.at(alice), cmdPinMessage, one.ID))
	must(t, text, "1 pinned.", "12-hour pin count: 3/100")
	if n := peers.count(); n != 2 {
		t.Fatalf("%d forwards, want 2", n)
	}
}

// TestForwardRefusedThenTaken: an owner that refuses before any work (its
// partition moving) is tried again, and the batch runs once.
func TestForwardRefusedThenTaken(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(2, "Two cats")
	peers.refuse = 2
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, "2 pinned.")
	if n := peers.count(); n != 3 {
		t.Fatalf("%d forwards, want 3 (two refused, one taken)", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", n)
	}
}

// TestForwardNoOwner: no owner takes the account in time: the user is
// told to try again, and nothing is pinned.
func TestForwardNoOwner(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(1, "x")
	peers.always = true
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, msgNoOwner)
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pins on Pinterest, want 0", n)
	}
}

// TestForwardLostAnswer: the owner pinned but its answer was lost: the
// user is told the outcome is unknown, and the batch is never sent again.
func TestForwardLostAnswer(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(2, "Two cats")
	peers.lose = true
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, msgForwardLost)
	if n := peers.count(); n != 1 {
		t.Fatalf("%d forwards, want 1: a lost answer is never retried", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins on Pinterest, want the 2 the owner made", n)
	}
}

// TestForwardComesHere: an account that comes to this member while its
// forward is refused runs here.
func TestForwardComesHere(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(1, "x")
	peers.always = true
	peers.onRefuse = func(p *fakePeers) {
		// The partition arrives while the front waits between tries.
		p.mu.Lock()
		p.here["1001"] = true
		p.mu.Unlock()
	}
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, "1 pinned.")
	if n := peers.count(); n != 1 {
		t.Fatalf("%d forwards, want 1", n)
	}
}

// TestHandlePeerRefuses: a member refuses, before any work, a forwarded
// batch of an account it does not serve, and an unknown method.
func TestHandlePeerRefuses(t *testing.T) {
	w, _ := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	body := fmt.Sprintf(`{"interaction":"1","token":"t","user":"%d","guild":"%d","channel":"%d","account":"1001","refs":[]}`, alice, w.guild, w.channel)
	// w.bot serves nothing: it refuses.
	if _, err := w.bot.HandlePeer(context.Background(), peerPin, []byte(body)); !errors.Is(err, ErrNotForwarded) {
		t.Fatalf("HandlePeer of an account not served: %v, want ErrNotForwarded", err)
	}
	if _, err := w.bot.HandlePeer(context.Background(), "drop-tables", nil); !errors.Is(err, ErrNotForwarded) {
		t.Fatalf("HandlePeer of an unknown method: %v, want ErrNotForwarded", err)
	}
	if _, err := w.bot.HandlePeer(context.Background(), peerPin, []byte("{")); err == nil || errors.Is(err, ErrNotForwarded) {
		t.Fatalf("HandlePeer of a malformed body: %v, want a decoding error", err)
	}
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pins, want 0", n)
	}
}

// TestForwardEngineCalls: /settings, /queue and its cancellation read and
// change an account's window and queue on the member that owns it; the
// accounts this member serves are read here.
func TestForwardEngineCalls(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first")
	peers.mu.Lock()
	peers.here["2002"] = true // served here; 1001 by the other member
	peers.mu.Unlock()
	w.fill("1001", 7)

	text := w.run(w.dc.SlashCommand(w.at(alice), cmdSettings))
	must(t, text, "• @second — 12-hour pins: 0/100", "▶ @first (active) — 12-hour pins: 7/100")
	if n := peers.count(); n != 2 {
		t.Fatalf("%d forwards for /settings, want 2 (first's count and its boards, listed with its token)", n)
	}

	w.fill("1001", 93) // at the limit: the next pins queue
	m := w.images(2, "")
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdPin,
		discordiotest.Opt{Name: optMessages, Value: m.ID.String()},
		discordiotest.Opt{Name: optWhenFull, Value: whenFullQueue}))
	must(t, text, "queued")
	before := peers.count()
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdQueue))
	must(t, text, msgQueueTitle, "**@first**", "(image 1 of 2) · starts at")
	if peers.count() == before {
		t.Fatal("/queue read first's queue without its owner")
	}
	text = w.run(w.dc.Button(w.at(alice), idQueueAll+"/1001", 0))
	must(t, text, "Canceled 2 queued pins.")
	if js := w.waiting("1001"); len(js) != 0 {
		t.Fatalf("%d pins still waiting", len(js))
	}

	// The owner refuses calls of accounts it does not serve, and unknown
	// ones, before any work.
	if _, err := w.bot.HandlePeer(context.Background(), peerEngine, []byte(`{"op":"status","account":"1001"}`)); !errors.Is(err, ErrNotForwarded) {
		t.Fatalf("engine call of an account not served: %v, want ErrNotForwarded", err)
	}
	if _, err := peers.owner.HandlePeer(context.Background(), peerEngine, []byte(`{"op":"drop","account":"1001"}`)); !errors.Is(err, ErrNotForwarded) {
		t.Fatalf("unknown engine call: %v, want ErrNotForwarded", err)
	}
}

// TestSessionFollowsStoredToken: a cached session whose token another
// process has since refreshed and stored (in a cluster, the account's
// previous owner) is replaced by one holding the stored token, never
// used with its dead refresh token.
func TestSessionFollowsStoredToken(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	ctx := context.Background()
	s1, err := w.bot.session(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := w.bot.session(ctx, "1001"); err != nil || s2 != s1 {
		t.Fatalf("second session() = %p, %v; want the cached %p", s2, err, s1)
	}
	rotated := &oauth2.Token{AccessToken: "refreshed-elsewhere", RefreshToken: "next", TokenType: "bearer", Expiry: time.Now().Add(time.Hour)}
	if err := w.links.SaveToken(ctx, "1001", rotated); err != nil {
		t.Fatal(err)
	}
	s3, err := w.bot.session(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if s3 == s1 || s3.Token().AccessToken != "refreshed-elsewhere" || s3.Token().RefreshToken != "next" {
		t.Fatalf("session after the token was refreshed elsewhere holds %+v, want the stored one", s3.Token())
	}
}
