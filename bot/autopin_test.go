package bot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
)

// autopinCmd runs /autopin sub in the world's channel as user, with the
// channel option when channel is not 0 and the board option when given.
func (w *world) autopinCmd(user snowflake.ID, sub string, channel snowflake.ID, board ...string) string {
	w.t.Helper()
	var opts []discordtest.CommandOption
	if channel != 0 {
		opts = append(opts, discordtest.CommandOption{Name: optChannel, Type: discord.ApplicationCommandOptionTypeChannel, Value: channel})
	}
	if len(board) > 0 {
		opts = append(opts, discordtest.CommandOption{Name: optBoard, Value: board[0]})
	}
	text, _ := w.run(discordtest.Invocation{ChannelID: w.channel.ID, UserID: user, Data: discordtest.ChatInput{
		Name:    cmdAutopin,
		Options: []discordtest.CommandOption{{Name: sub, Type: discord.ApplicationCommandOptionTypeSubCommand, Options: opts}},
	}})
	return text
}

// storedRules returns the auto-pin rules the store holds for the world's
// server.
func (w *world) storedRules() []links.AutopinRule {
	w.t.Helper()
	rs, err := w.links.AutopinRules(w.ctx, w.guild.ID.String())
	if err != nil {
		w.t.Fatal(err)
	}
	return rs
}

// watchAutopin returns the channel of every auto-pin message's result.
func (w *world) watchAutopin() chan string {
	done := make(chan string, 1024)
	w.bot.autopin.onDone = func(_ discordio.Message, result string) { done <- result }
	return done
}

// autopinResult waits for the result of the next auto-pin message.
func (w *world) autopinResult(done chan string) string {
	w.t.Helper()
	select {
	case r := <-done:
		return r
	case <-w.ctx.Done():
		w.t.Fatal("no auto-pin message ended")
		return ""
	}
}

// postImages posts a message with n pictures in channel by author and
// hands its MESSAGE_CREATE to the bot as the gateway does: without the
// message content intent, attachments do not show.
func (w *world) postImages(channel, author snowflake.ID, n int) discordtest.Message {
	w.t.Helper()
	atts := make([]discordtest.Attachment, n)
	for i := range atts {
		atts[i] = discordtest.Attachment{Filename: fmt.Sprintf("img%d.png", i), ContentType: "image/png", Width: 640, Height: 480}
	}
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: channel, AuthorID: author, Attachments: atts})
	if err != nil {
		w.t.Fatal(err)
	}
	w.bot.HandleMessage(discordio.Message{GuildID: w.guild.ID, ChannelID: channel, MessageID: m.ID, AuthorID: author})
	return m
}

// TestAutopinCommand: /autopin add needs a linked account, Manage
// Channels in the channel (checked on use), a text channel, a board of
// the account; list shows the rules; pause, resume and remove are for
// the owner or a channel manager; every mistake is answered.
func TestAutopinCommand(t *testing.T) {
	w := newWorld(t, worldOptions{})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	alice := w.addUser("alice") // no Manage Channels
	w.link(alice, "a2", "alice_art")
	other := w.addMemberWith(w.guild.ID, "other", discord.PermissionManageChannels) // linked nothing
	boss := w.addMemberWith(w.guild.ID, "boss", discord.PermissionAdministrator)
	w.link(boss, "a3", "boss")
	modName, aliceName := accountName("mod_art", "a1"), accountName("alice_art", "a2")
	voice, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "voice", Type: discord.ChannelTypeGuildVoice})
	if err != nil {
		t.Fatal(err)
	}
	art, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "art",
		Overwrites: []discordtest.Overwrite{discordtest.MemberOverwrite(alice, discord.PermissionManageChannels, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	ch := w.channel.ID
	steps := []struct {
		user    snowflake.ID
		sub     string
		channel snowflake.ID
		board   []string
		want    string
		rules   int // stored afterwards
	}{
		{mod, subAutopinList, 0, nil, msgAutopinNone, 0},
		{alice, subAutopinAdd, ch, []string{"ba2"}, msgAutopinNotManager, 0},
		{other, subAutopinAdd, ch, []string{"ba1"}, msgNoAccount, 0},
		{mod, subAutopinAdd, voice.ID, []string{"ba1"}, msgAutopinNotText, 0},
		{mod, subAutopinAdd, ch, []string{"no such board"}, "no such board", 0},
		{mod, subAutopinAdd, ch, []string{"Board of mod_art"}, "are queued for " + modName + ", board Board of mod_art", 1},
		{boss, subAutopinAdd, ch, []string{"ba3"}, fmt.Sprintf("<#%s> already pins itself, for <@%s>", ch, mod), 1},
		{mod, subAutopinList, 0, nil, fmt.Sprintf("<#%s> → %s, board Board of mod_art · set by <@%s>", ch, modName, mod), 1},
		{alice, subAutopinStop, ch, nil, msgAutopinNotAllowed, 1},
		{mod, subAutopinStop, art.ID, nil, "does not pin itself", 1},
		{mod, subAutopinStop, ch, nil, "Paused:", 1},
		{mod, subAutopinStop, ch, nil, "was already paused", 1},
		{alice, subAutopinList, 0, nil, "· paused", 1},
		{mod, subAutopinGo, ch, nil, "Resumed:", 1},
		{mod, subAutopinGo, ch, nil, "was not paused", 1},
		{alice, subAutopinDrop, ch, nil, msgAutopinNotAllowed, 1},
		{boss, subAutopinDrop, ch, nil, "no longer pins itself", 0},
		{mod, subAutopinDrop, ch, nil, "does not pin itself", 0},
	}
	for i, st := range steps {
		got := w.autopinCmd(st.user, st.sub, st.channel, st.board...)
		if !strings.Contains(got, st.want) {
			t.Errorf("step %d: /autopin %s answered %q, want %q in it", i, st.sub, got, st.want)
		}
		if n := len(w.storedRules()); n != st.rules {
			t.Errorf("step %d: %d rules stored, want %d", i, n, st.rules)
		}
	}
	// The rule's owner may change it without Manage Channels: alice,
	// who has it in art alone, sets art; a rule of hers in the channel
	// where she lacks it (stored as another member would have) she
	// still pauses, and carol, neither owner nor manager, may not.
	if got := w.autopinCmd(alice, subAutopinAdd, art.ID, "ba2"); !strings.Contains(got, "are queued for "+aliceName) {
		t.Fatalf("alice with Manage Channels in art: %q", got)
	}
	carol := w.addUser("carol")
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.ID.String(), func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
		return append(rs, links.AutopinRule{Channel: ch.String(), Owner: alice.String(), Account: "a2", Board: "ba2"}), nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := w.autopinCmd(carol, subAutopinStop, ch); got != msgAutopinNotAllowed {
		t.Fatalf("carol pausing alice's rule: %q", got)
	}
	if got := w.autopinCmd(alice, subAutopinStop, ch); !strings.Contains(got, "Paused:") {
		t.Fatalf("the owner pausing her rule: %q", got)
	}
	want := []links.AutopinRule{
		{Channel: art.ID.String(), Owner: alice.String(), Account: "a2", Board: "ba2", BoardName: "Board of alice_art"},
		{Channel: ch.String(), Owner: alice.String(), Account: "a2", Board: "ba2", Paused: true},
	}
	if got := w.storedRules(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("stored %+v, want %+v", got, want)
	}
}

// TestAutopinLimit: a server has at most links.MaxAutopinRules auto-pin
// channels; the next is refused, saying so.
func TestAutopinLimit(t *testing.T) {
	w := newWorld(t, worldOptions{})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.ID.String(), func([]links.AutopinRule) ([]links.AutopinRule, error) {
		var rs []links.AutopinRule
		for i := range links.MaxAutopinRules {
			rs = append(rs, links.AutopinRule{Channel: fmt.Sprint(i + 1), Owner: mod.String(), Account: "a1", Board: "ba1"})
		}
		return rs, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := w.autopinCmd(mod, subAutopinAdd, w.channel.ID, "ba1"); got != msgAutopinFull(links.MaxAutopinRules) {
		t.Fatalf("the rule beyond the limit: %q", got)
	}
	if n := len(w.storedRules()); n != links.MaxAutopinRules {
		t.Fatalf("%d rules stored", n)
	}
}

// TestAutopinQueuesPictures: a message of 3 pictures in an auto-pin
// channel queues 3 jobs for the rule's board, as its owner, with their
// start times; they run, and the owner learns it in one digest. The same
// message delivered again queues nothing more, nor does a message whose
// pictures are already pinned to the board.
func TestAutopinQueuesPictures(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	if got := w.autopinCmd(mod, subAutopinAdd, w.channel.ID, "ba1"); !strings.Contains(got, "are queued") {
		t.Fatal(got)
	}
	done := w.watchAutopin()
	poster := w.addUser("poster")
	// Hold the engine's jobs at the limit, so that they wait to be seen.
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	m := w.postImages(w.channel.ID, poster, 3)
	if r := w.autopinResult(done); r != autopinQueued {
		t.Fatalf("result %q, want %q", r, autopinQueued)
	}
	js := w.jobs("a1")
	if len(js) != 3 {
		t.Fatalf("%d jobs, want 3", len(js))
	}
	window := w.engine.Config().Window
	for i, j := range js {
		q, err := decodeQueuedPin(j.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if q.User != mod || q.Message != m.ID || q.Image != i+1 || q.Images != 3 || q.Board != "ba1" || q.Interaction != 0 {
			t.Errorf("job %d: %+v", i, q)
		}
		if j.State != actors.JobWaiting || !j.Due.Equal(t0.Add(window)) {
			t.Errorf("job %d: %v due %v, want waiting due %v", i, j.State, j.Due, t0.Add(window))
		}
	}
	// The owner sees them in /queue, as theirs.
	qtext, _ := w.run(discordtest.Invocation{UserID: mod, Data: discordtest.ChatInput{Name: cmdQueue}})
	if n := strings.Count(qtext, "⏳"); n != 3 || strings.Contains(qtext, "queued by") || !strings.Contains(qtext, "(image 3 of 3)") {
		t.Fatalf("/queue of the owner shows:\n%s", qtext)
	}
	// Delivered again (a RESUME): nothing more.
	w.bot.HandleMessage(discordio.Message{GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster})
	if r := w.autopinResult(done); r != autopinDuplicate {
		t.Fatalf("again: %q, want %q", r, autopinDuplicate)
	}
	w.setClocks(t0.Add(window))
	for range 3 {
		w.nextJob()
	}
	if n := len(w.ps.PinsFor("a1")); n != 3 {
		t.Fatalf("%d pins, want 3", n)
	}
	if err := w.digestClock.WaitTimers(w.ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.digestClock.Advance(time.Minute)
	dms, err := w.dc.WaitDMs(w.ctx, mod, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(dms) != 1 || strings.Count(dms[0].Content, "✅") != 3 {
		t.Fatalf("DMs to the owner: %+v", dms)
	}
	// The same message once its delivery is forgotten: its pictures are
	// pinned to the board already (the history), so nothing is queued.
	w.bot.autopin.mu.Lock()
	clear(w.bot.autopin.recent)
	w.bot.autopin.mu.Unlock()
	before := len(w.jobs("a1"))
	w.bot.HandleMessage(discordio.Message{GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster})
	if r := w.autopinResult(done); r != autopinQueued {
		t.Fatalf("again, forgotten: %q, want it worked on", r)
	}
	if n := len(w.jobs("a1")); n != before {
		t.Fatalf("%d jobs after the pictures pinned already, want %d", n, before)
	}
	// A message that is gone by the time it is read queues nothing.
	w.bot.HandleMessage(discordio.Message{GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID + 1_000_000, AuthorID: poster})
	if r := w.autopinResult(done); r != autopinFailed {
		t.Fatalf("a message that does not exist: %q, want %q", r, autopinFailed)
	}
	w.checkMetrics("autopin", metric{"pinbot_pins_total", []string{"source", "autopin", "result", "queued"}, 3})
}

// TestAutopinIgnores: a paused rule, a channel with no rule, a bot's
// message, a message the event shows without pictures, a DM, and every
// message with auto-pin off queue nothing; the last reads no rule.
func TestAutopinIgnores(t *testing.T) {
	for _, off := range []bool{false, true} {
		w := newWorld(t, worldOptions{jobs: true, bot: func(c *Config) { c.NoAutopin = off }})
		mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
		w.link(mod, "a1", "mod_art")
		if got := w.autopinCmd(mod, subAutopinAdd, w.channel.ID, "ba1"); !strings.Contains(got, "are queued") {
			t.Fatal(got)
		}
		if off && !strings.Contains(w.autopinCmd(mod, subAutopinList, 0), msgAutopinOff) {
			t.Errorf("list with auto-pin off does not say so")
		}
		other, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		done := w.watchAutopin()
		poster := w.addUser("poster")
		ev := func(channel snowflake.ID) discordio.Message {
			m := w.addImages(channel, 1, "")
			return discordio.Message{GuildID: w.guild.ID, ChannelID: channel, MessageID: m.ID, AuthorID: poster}
		}
		bot := ev(w.channel.ID)
		bot.Bot = true
		words := ev(w.channel.ID)
		words.Shown = true
		dm := ev(w.channel.ID)
		dm.GuildID = 0
		for i, m := range []discordio.Message{ev(other.ID), bot, words, dm} {
			w.bot.HandleMessage(m)
			if r := w.autopinResult(done); r != autopinIgnored {
				t.Errorf("off %v, case %d: %q, want ignored", off, i, r)
			}
		}
		w.autopinCmd(mod, subAutopinStop, w.channel.ID)
		w.bot.HandleMessage(ev(w.channel.ID))
		if r := w.autopinResult(done); r != autopinIgnored {
			t.Errorf("off %v, paused: %q, want ignored", off, r)
		}
		w.autopinCmd(mod, subAutopinGo, w.channel.ID)
		w.bot.HandleMessage(ev(w.channel.ID))
		want := autopinQueued
		if off {
			want = autopinIgnored
		}
		if r := w.autopinResult(done); r != want {
			t.Errorf("off %v, resumed: %q, want %q", off, r, want)
		}
		if n, want := len(w.jobs("a1")), map[bool]int{false: 1, true: 0}[off]; n != want {
			t.Errorf("off %v: %d jobs, want %d", off, n, want)
		}
		var gc discordio.GatewayConfig
		w.bot.autopinGateway(&gc)
		if (gc.OnMessage == nil) != off {
			t.Errorf("off %v: the gateway's OnMessage set %v", off, gc.OnMessage != nil)
		}
	}
}

// TestAutopinRulesReadOnce: a server's rules are read once for the
// messages that come together, then judged from memory until
// guildCacheFor has passed; a rule added by another member shows after
// it.
func TestAutopinRulesReadOnce(t *testing.T) {
	w := newWorld(t, worldOptions{})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	done := w.watchAutopin()
	poster := w.addUser("poster")
	post := func() {
		w.t.Helper()
		m := w.addImages(w.channel.ID, 1, "")
		w.bot.HandleMessage(discordio.Message{GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster})
	}
	post()
	if r := w.autopinResult(done); r != autopinIgnored {
		t.Fatalf("no rule: %q", r)
	}
	// Stored by another member: this one still judges by what it read.
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.ID.String(), func([]links.AutopinRule) ([]links.AutopinRule, error) {
		return []links.AutopinRule{{Channel: w.channel.ID.String(), Owner: mod.String(), Account: "a1", Board: "ba1"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	post()
	if r := w.autopinResult(done); r != autopinIgnored {
		t.Fatalf("within guildCacheFor: %q, want ignored", r)
	}
	w.setClocks(t0.Add(guildCacheFor))
	post()
	if r := w.autopinResult(done); r != autopinQueued {
		t.Fatalf("after guildCacheFor: %q, want queued", r)
	}
}

// TestAutopinBurst: 500 messages of one picture posted in one minute to
// an auto-pin channel are all queued, in order, each with its exact start
// time; they run at those times, and Pinterest never holds more than the
// limit in any window.
func TestAutopinBurst(t *testing.T) {
	const n = 500
	// 500 messages, then 500 queued pins one after another: minutes
	// under the race detector beside the other packages' tests.
	w := newWorld(t, worldOptions{jobs: true, quiet: true, timeout: 8 * time.Minute})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	if got := w.autopinCmd(mod, subAutopinAdd, w.channel.ID, "ba1"); !strings.Contains(got, "are queued") {
		t.Fatal(got)
	}
	done := w.watchAutopin()
	poster := w.addUser("poster")
	var posted []snowflake.ID
	for i := range n {
		w.setClocks(t0.Add(time.Duration(i) * time.Minute / n))
		posted = append(posted, w.postImages(w.channel.ID, poster, 1).ID)
		if r := w.autopinResult(done); r != autopinQueued {
			t.Fatalf("message %d: %q", i, r)
		}
	}
	window, limit := w.engine.Config().Window, w.engine.Config().Limit
	// The jobs still waiting follow the messages' order, with start
	// times in order; those that ran already are pins.
	var dues []time.Time
	var prev actors.Job
	next := 0 // index in posted
	waiting := 0
	for _, j := range w.jobs("a1") {
		if j.State != actors.JobWaiting {
			continue
		}
		waiting++
		q, err := decodeQueuedPin(j.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for next < n && posted[next] != q.Message {
			next++
		}
		if next == n {
			t.Fatalf("job %d (message %v) out of the messages' order", j.ID, q.Message)
		}
		if j.Due.IsZero() || j.Due.Before(prev.Due) {
			t.Fatalf("job %d due %v, after job %d due %v", j.ID, j.Due, prev.ID, prev.Due)
		}
		prev = j
		dues = append(dues, j.Due)
	}
	ranEarly := len(w.ps.PinsFor("a1"))
	if waiting+ranEarly != n {
		t.Fatalf("%d waiting and %d pinned, want %d in all", waiting, ranEarly, n)
	}
	for _, p := range w.ps.PinsFor("a1") {
		dues = append(dues, p.CreatedAt)
	}
	if got := maxInWindow(dues, window); got > limit {
		t.Fatalf("%d pins and start times in one window, more than %d", got, limit)
	}
	// Each waiting job at its start time, until none waits or runs
	// (jobDone also holds those that ran during the posting).
	for {
		var first *actors.Job
		running := 0
		for _, j := range w.jobs("a1") {
			switch {
			case j.State == actors.JobRunning:
				running++
			case j.State == actors.JobWaiting && first == nil:
				first = &j
			}
		}
		if first == nil && running == 0 {
			break
		}
		if first != nil {
			w.setClocks(first.Due)
		}
		w.nextJob()
	}
	pins := w.ps.PinsFor("a1")
	if len(pins) != n {
		t.Fatalf("%d pins, want %d", len(pins), n)
	}
	var made []time.Time
	for _, p := range pins {
		made = append(made, p.CreatedAt)
	}
	if got := maxInWindow(made, window); got > limit {
		t.Fatalf("Pinterest holds %d pins in one window, more than %d", got, limit)
	}
}

// TestAutopinOwnerAccess: a rule whose owner may no longer read its
// channel queues nothing and pauses itself; the pins are the owner's, as
// if they ran /pin there.
func TestAutopinOwnerAccess(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	secret, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "secret",
		Overwrites: []discordtest.Overwrite{discordtest.MemberOverwrite(alice, 0, discord.PermissionViewChannel)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.ID.String(), func([]links.AutopinRule) ([]links.AutopinRule, error) {
		return []links.AutopinRule{
			{Channel: secret.ID.String(), Owner: alice.String(), Account: "a1", Board: "ba1"},
			{Channel: w.channel.ID.String(), Owner: alice.String(), Account: "a1", Board: "ba1"},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	done := w.watchAutopin()
	poster := w.addUser("poster")
	w.postImages(secret.ID, poster, 1)
	if r := w.autopinResult(done); r != autopinPaused {
		t.Fatalf("the owner cannot view the channel: %q, want %q", r, autopinPaused)
	}
	if rs := w.storedRules(); !rs[0].Paused || rs[1].Paused {
		t.Fatalf("rules %+v, want the secret channel's paused", rs)
	}
	w.postImages(secret.ID, poster, 1)
	if r := w.autopinResult(done); r != autopinIgnored {
		t.Fatalf("the paused channel: %q, want %q", r, autopinIgnored)
	}
	w.postImages(w.channel.ID, poster, 1)
	if r := w.autopinResult(done); r != autopinQueued {
		t.Fatalf("the owner's readable channel: %q, want %q", r, autopinQueued)
	}
	if n := len(w.jobs("a1")); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// TestAutopinBoardAutocomplete: /autopin add's board option offers the
// boards of the caller's active account, as /pin's does.
func TestAutopinBoardAutocomplete(t *testing.T) {
	w := newWorld(t, worldOptions{})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
	w.link(mod, "a1", "mod_art")
	in := w.interact(discordtest.Invocation{UserID: mod, Data: discordtest.Autocomplete{Name: cmdAutopin, Options: []discordtest.CommandOption{
		{Name: subAutopinAdd, Type: discord.ApplicationCommandOptionTypeSubCommand, Options: []discordtest.CommandOption{
			{Name: optChannel, Type: discord.ApplicationCommandOptionTypeChannel, Value: w.channel.ID},
			{Name: optBoard, Value: "board", Focused: true},
		}},
	}}})
	w.waitDone(in)
	rs := in.Responses()
	if len(rs) != 1 || len(rs[0].Choices) != 1 || rs[0].Choices[0].Name != "Board of mod_art" || rs[0].Choices[0].Value != "ba1" {
		t.Fatalf("autocomplete responses %+v; want the board of mod_art", rs)
	}
}
