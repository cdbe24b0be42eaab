package bot

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio/discordiotest"
	"github.com/pinbot/pinbot/internal/metrics"
)

// TestMetricsPinSources: pictures count under what asked for them, /pin
// (command), Pin to Pinterest (message_command), a pin reaction
// (reaction), and a queued pin when it runs (queued, having counted as
// queued under its command); a picture the board had already counts as
// a duplicate avoided under its source.
func TestMetricsPinSources(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m1 := w.addImages(w.channel.ID, 1, "")
	m2 := w.addImages(w.channel.ID, 1, "")
	m3 := w.addImages(w.channel.ID, 1, "")
	pinMsg := func(m discordtest.Message) string {
		text, _ := w.run(discordtest.Invocation{UserID: alice, Data: discordtest.MessageCommand{Name: cmdPinMessage, TargetID: m.ID}})
		return text
	}

	text, _ := w.pin(alice, ids(m1))
	must(t, text, "1 pinned")
	text, _ = w.pin(alice, ids(m1))
	must(t, text, "already pinned")
	must(t, pinMsg(m2), "1 pinned")
	must(t, pinMsg(m2), "already pinned")
	if e := w.react(m3, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("📌 on m3: %q", e.result)
	}
	if e := w.react(m1, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("📌 on m1: %q", e.result)
	}
	w.checkMetrics("command, message command, reaction",
		metric{"pinbot_pins_total", []string{"source", sourceCommand, "result", pinPinned}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceCommand, "result", pinSkipped}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceMessageCommand, "result", pinPinned}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceMessageCommand, "result", pinSkipped}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceReaction, "result", pinPinned}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceReaction, "result", pinSkipped}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceQueued}, 0},
		metric{"pinbot_duplicates_avoided_total", []string{"source", sourceCommand}, 1},
		metric{"pinbot_duplicates_avoided_total", []string{"source", sourceMessageCommand}, 1},
		metric{"pinbot_duplicates_avoided_total", []string{"source", sourceReaction}, 1},
		metric{"pinbot_duplicates_avoided_total", []string{"source", sourceQueued}, 0},
		metric{"pinbot_pins_total", []string{"source", "other"}, 0},
	)

	w.fill("1001", 97)
	m4 := w.addImages(w.channel.ID, 1, "")
	text, _ = w.run(queueInvocation(alice, ids(m4)))
	must(t, text, "1 queued")
	w.setClocks(t0.Add(12 * time.Hour))
	w.nextJob()
	w.checkMetrics("a queued pin ran",
		metric{"pinbot_pins_total", []string{"source", sourceCommand, "result", pinQueued}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceQueued, "result", pinPinned}, 1},
		metric{"pinbot_pins_total", []string{"source", sourceQueued}, 1},
		metric{"pinbot_pins_total", []string{"source", "other"}, 0},
	)
}

// TestMetricsPinSourcesMatch: the sources the bot reports are the ones
// the metrics list.
func TestMetricsPinSourcesMatch(t *testing.T) {
	if !slices.Equal(pinSources, metrics.PinSources) {
		t.Fatalf("bot sources %v, metrics labels %v", pinSources, metrics.PinSources)
	}
}

// sourceRecorder records the sources of PinDone.
type sourceRecorder struct {
	nopObserver
	mu      sync.Mutex
	sources []string
}

func (r *sourceRecorder) PinDone(source, _, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, source)
}

func (r *sourceRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sources)
}

// TestMetricsPinSourcesForwarded: in a cluster, the member that owns the
// account counts the pictures of a forwarded batch under the source of
// the command that asked for them.
func TestMetricsPinSourcesForwarded(t *testing.T) {
	w, peers := forwardWorld(t)
	rec := &sourceRecorder{}
	peers.owner.cfg.Observer = rec
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(1, "A cat")
	must(t, w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()})), "1 pinned.")
	must(t, w.run(w.dc.MessageCommand(w.at(alice), cmdPinMessage, w.images(1, "A dog").ID)), "1 pinned.")
	if got, want := rec.got(), []string{sourceCommand, sourceMessageCommand}; !slices.Equal(got, want) {
		t.Fatalf("the owner counted sources %v, want %v", got, want)
	}
}
