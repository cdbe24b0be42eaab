package discordio

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// hammer has clients REST clients, each told that processes share the
// token, send perClient requests the global limit binds (GET
// /channels/{id}, each on a channel of its own so that no route bucket
// holds them) as fast as their limiters let them, to a stand-in enforcing
// Discord's global limit. It returns how many global 429s the stand-in
// gave.
func hammer(t *testing.T, clients, processes, perClient int) int {
	t.Helper()
	dc := discordtest.NewServer(discordtest.WithGlobalRateLimit(discordtest.GlobalLimit, discordtest.GlobalWindow))
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for c := range clients {
		r := NewREST(RESTConfig{
			Token: dc.Token(), AppID: discordtest.DefaultApplicationID, URL: dc.APIURL(), Log: zerolog.Nop(),
			Processes: func() int { return processes },
		})
		defer r.Close(context.Background())
		for i := range perClient {
			wg.Go(func() {
				id := snowflake.ID(1000*(c+1) + i)
				if _, err := r.Channel(ctx, id); err != nil && !NotFound(err) {
					t.Errorf("client %d, channel %d: %v", c, id, err)
				}
			})
		}
	}
	wg.Wait()
	return dc.GlobalRateLimited()
}

// TestRESTSharesGlobalLimit: three processes' clients, each keeping to
// its share of three, together stay under Discord's global limit while
// each sends twice its share; each taking the whole limit, they meet
// global 429s.
func TestRESTSharesGlobalLimit(t *testing.T) {
	const clients = 3
	perClient := 2 * GlobalShare(clients)
	if n := hammer(t, clients, clients, perClient); n != 0 {
		t.Errorf("with shares of %d processes: %d global 429s, want none", clients, n)
	}
	if n := hammer(t, clients, 1, perClient); n == 0 {
		t.Error("each client taking the whole limit: no global 429, want some (the stand-in's limit is off?)")
	}
}
