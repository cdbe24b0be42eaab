package app

import (
	"testing"

	"github.com/pinbot/pinbot/bot"
)

// The checkpoint stored lags shardCheckpointLag samples behind the last
// event handed on, and never reaches back into a previous session.
func TestCheckpointLags(t *testing.T) {
	var ss []bot.ShardSession
	at := func(id string, seq int) bot.ShardSession { return bot.ShardSession{SessionID: id, Sequence: seq} }
	var pick bot.ShardSession
	for i, c := range []struct {
		cur  bot.ShardSession
		want int
	}{
		{at("a", 10), 10}, // the first sample: nothing older
		{at("a", 20), 10},
		{at("a", 30), 10},
		{at("a", 40), 20},
		{at("a", 50), 30},
	} {
		if ss, pick = lagged(ss, c.cur); pick.SessionID != "a" || pick.Sequence != c.want {
			t.Fatalf("sample %d (%+v): stored %+v, want sequence %d", i, c.cur, pick, c.want)
		}
	}
	if len(ss) != shardCheckpointLag+1 {
		t.Fatalf("%d samples kept, want %d", len(ss), shardCheckpointLag+1)
	}
	// A new session (the shard identified again): its own first sample.
	if ss, pick = lagged(ss, at("b", 3)); pick != at("b", 3) {
		t.Fatalf("new session: stored %+v", pick)
	}
	if _, pick = lagged(ss, at("b", 9)); pick != at("b", 3) {
		t.Fatalf("new session, second sample: stored %+v", pick)
	}
}
