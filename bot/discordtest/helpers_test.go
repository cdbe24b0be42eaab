package discordtest_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
)

var debugLogs = flag.Bool("discordtest.debug", false, "write the stand-in's and disgo's debug logs to the test log")

// testWriter writes to a test's log until the test ends; goroutines that
// outlive the test (disgo's) are silenced instead of panicking the binary.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// testLogger returns a logger that writes warnings (everything with
// -discordtest.debug) to t's log.
func testLogger(t testing.TB) zerolog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	level := zerolog.WarnLevel
	if *debugLogs {
		level = zerolog.DebugLevel
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: "15:04:05.000"}).
		Level(level).With().Timestamp().Logger()
}

// newServer starts a stand-in that is closed, and checked for leaked
// goroutines, when the test ends.
func newServer(t testing.TB, opts ...discordtest.Option) *discordtest.Server {
	t.Helper()
	s := discordtest.NewServer(append([]discordtest.Option{discordtest.WithLogger(testLogger(t))}, opts...)...)
	t.Cleanup(s.Close)
	return s
}

// TestMain fails the run if, after all tests closed their servers, a
// goroutine still runs code of the stand-in. Close waits for all of them,
// but a handler goroutine may still be returning from its deferred
// WaitGroup.Done when Close's Wait returns: the check gives goroutines a
// moment to exit (as goleak does), then reports those still there.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 {
		leaks := leakedGoroutines()
		for deadline := time.Now().Add(2 * time.Second); len(leaks) > 0 && time.Now().Before(deadline); leaks = leakedGoroutines() {
			time.Sleep(10 * time.Millisecond)
		}
		if len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "goroutines still running after Close:\n\n%s\n", strings.Join(leaks, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines returns the stacks of goroutines running the stand-in's
// code.
func leakedGoroutines() []string {
	buf := make([]byte, 4<<20)
	n := runtime.Stack(buf, true)
	var out []string
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "pinbot/bot/discordtest.") {
			out = append(out, g)
		}
	}
	return out
}

// testContext returns a context that ends with the test or after 10 s.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// guildOnShard returns a guild ID, distinct per n, that shard of count
// owns.
func guildOnShard(shard, count, n int) snowflake.ID {
	return snowflake.ID(uint64(n*count+shard)<<22 | 1)
}

// world is a small model: one guild with a text channel, a member and a
// message with an image.
type world struct {
	guild   discordtest.Guild
	channel discordtest.Channel
	user    discordtest.Member
	message discordtest.Message
}

// addWorld fills s with a world in a guild on the given shard.
func addWorld(t testing.TB, s *discordtest.Server, shard, count, n int) world {
	t.Helper()
	var w world
	var err error
	if w.guild, err = s.AddGuild(discordtest.Guild{ID: guildOnShard(shard, count, n)}); err != nil {
		t.Fatal(err)
	}
	if w.channel, err = s.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "general"}); err != nil {
		t.Fatal(err)
	}
	if w.user, err = s.AddMember(discordtest.Member{GuildID: w.guild.ID, Username: "alice"}); err != nil {
		t.Fatal(err)
	}
	w.message, err = s.AddMessage(discordtest.Message{
		ChannelID: w.channel.ID,
		AuthorID:  w.user.UserID,
		Content:   "look at this",
		Attachments: []discordtest.Attachment{
			{Filename: "cat.png", ContentType: "image/png", Width: 640, Height: 480},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
