package bot

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// BenchmarkPin1000Guilds sends 1,000 /pin interactions at once, from 1,000
// guilds, each user with a Pinterest account of their own, through the
// real disgo client, the real Pinterest client and the real engine
// against the stand-ins on loopback (without opening a disgo gateway; see
// startPump). Each op is one such wave. It reports:
//
//   - ack-p50-ms, ack-p99-ms: the time from each interaction's creation
//     to its initial response, on the Discord stand-in's wall clock
//     (Discord's deadline is 3 s);
//   - own-p50-µs, own-p99-µs: the bot's own time per pin, from reserving
//     the slot to committing it, minus the Pinterest call.
//
// Sub-benchmarks vary the gateway shards (each decodes its events on one
// goroutine, as disgo's do: decoding an INTERACTION_CREATE costs disgo
// about 0.1 ms, which bounds one shard to some 10,000 interactions a
// second) and Config.Workers (0: DefaultWorkers).
func BenchmarkPin1000Guilds(b *testing.B) {
	for _, c := range []struct{ shards, workers int }{{1, 0}, {4, 0}} {
		b.Run(fmt.Sprintf("shards=%d/workers=%d", c.shards, c.workers), func(b *testing.B) {
			benchmarkPinWave(b, 1000, c.shards, c.workers)
		})
	}
}

func benchmarkPinWave(b *testing.B, n, shards, workers int) {
	transport := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
	w := newWorld(b, worldOptions{shards: shards, workers: workers, realDiscordClock: true, quiet: true,
		pinterestHTTP: &http.Client{Transport: transport}})
	type job struct {
		user, channel snowflake.ID
		msg           string
	}
	jobs := make([]job, n)
	for i := range jobs {
		g, err := w.dc.AddGuild(discordtest.Guild{Name: fmt.Sprintf("g%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		ch, err := w.dc.AddChannel(discordtest.Channel{GuildID: g.ID})
		if err != nil {
			b.Fatal(err)
		}
		m, err := w.dc.AddMember(discordtest.Member{GuildID: g.ID})
		if err != nil {
			b.Fatal(err)
		}
		acct := fmt.Sprintf("%d", 500000+i)
		cred := w.ps.AddAccount(acct, "u"+acct, pinteresttest.Board{ID: "b" + acct, Name: "Board"})
		if err := w.links.Link(w.ctx, m.UserID.String(), links.Account{ID: acct, Username: "u" + acct, DefaultBoard: "b" + acct, DefaultBoardName: "Board"}, cred.Token()); err != nil {
			b.Fatal(err)
		}
		jobs[i] = job{user: m.UserID, channel: ch.ID, msg: w.addImages(ch.ID, 1, "").ID.String()}
	}
	var mu sync.Mutex
	var own, acks []time.Duration
	w.bot.onPin = func(total, call time.Duration) {
		mu.Lock()
		own = append(own, total-call)
		mu.Unlock()
	}

	b.ResetTimer()
	for range b.N {
		ins := make([]*discordtest.Interaction, n)
		var wg sync.WaitGroup
		for k := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := k; i < n; i += 8 {
					j := jobs[i]
					in, err := w.dc.Interact(discordtest.Invocation{ChannelID: j.channel, UserID: j.user,
						// again: every round pins the same messages, each
						// time for real.
						Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{{Name: optMessages, Value: j.msg}, {Name: optAgain, Value: true}}}})
					if err != nil {
						b.Error(err)
						return
					}
					ins[i] = in
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		for _, in := range ins {
			w.waitDone(in)
			lat, ok := in.FirstResponseLatency()
			if !ok {
				b.Fatalf("interaction %d never acknowledged: %+v", in.ID, in.Responses())
			}
			acks = append(acks, lat)
		}
	}
	b.StopTimer()
	if len(own) != n*b.N {
		b.Fatalf("%d pins made, want %d", len(own), n*b.N)
	}
	b.ReportMetric(ms(pct(acks, 50)), "ack-p50-ms")
	b.ReportMetric(ms(pct(acks, 99)), "ack-p99-ms")
	b.ReportMetric(us(pct(own, 50)), "own-p50-µs")
	b.ReportMetric(us(pct(own, 99)), "own-p99-µs")
}

// pct returns the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
