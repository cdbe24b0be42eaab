//go:build !race && unix

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/persistence"
)

// audit checks the whole of TestDisgoGatewayCrashSoak's run once the bot
// stopped cleanly, no job running or waiting, from what outlives every
// run: Pinterest's ledger (no account over the limit in any rolling
// window, no picture pinned twice to an account), the messages the
// Discord stand-in holds (every result in the user's DMs or in the
// channel where its /pin ran), the lines in which each run logged the
// jobs it found running and the searches on Pinterest that resolved
// them, and the queue left in the data directory dir. Every job found
// running after a kill is resolved: found on Pinterest, it ended pinned
// with the URL of its pin; proven absent, it went back to the queue and
// was sent again, and ended pinned; none ended unknown ("may exist"),
// none was sent twice. No queued pin is lost, none reported "may exist":
// each is on Pinterest, and its job done. It returns what became of the
// jobs found running, for the log.
func (s *soak) audit(dir layout, runs []*child) soakResolved {
	s.t.Helper()
	made := map[pinKey]int{}
	pinURL := map[pinKey]string{} // the page of the pin Pinterest holds
	for _, p := range s.ps.Pins() {
		k, ok := s.keyOf(p)
		if !ok {
			s.t.Errorf("Pinterest holds pin %s of an image the soak never posted (%s)", p.ID, p.ImageURL)
			continue
		}
		made[k]++
		pinURL[k] = "https://www.pinterest.com/pin/" + p.ID + "/"
	}
	for k, n := range made {
		if n > 1 {
			what := "a pin"
			if q := s.queued[k]; q != nil {
				what = fmt.Sprintf("a pin %s queued in cycle %d", q.user.name, q.cycle)
			}
			s.t.Errorf("Pinterest holds %v %d times: %s was sent more than once", k, n, what)
		}
	}
	for _, u := range s.users {
		if m := s.ps.MaxInWindow(u.account, soakWindow); m > soakLimit {
			s.t.Errorf("Pinterest holds %d pins of %s in one %v window, over the limit of %d", m, u.name, soakWindow, soakLimit)
		}
	}

	told, inDMs, inChannels := s.results()
	stored := s.storedJobs(dir)
	waiting, inflight, done := map[pinKey]bool{}, map[pinKey]bool{}, map[pinKey]bot.QueuedPinResult{}
	running := 0
	for _, j := range stored {
		switch j.state {
		case persistence.JobWaiting:
			waiting[j.key] = true
		case persistence.JobRunning:
			// Sending, or being looked for on Pinterest (a job found
			// running is never sent again unless proven absent).
			inflight[j.key] = true
			running++
		case persistence.JobDone:
			done[j.key] = j.result
		}
	}
	// A job found running after a kill may have sent its pin: it is
	// looked for on Pinterest once its slot's deadline and the listing's
	// lag have passed, and ends pinned with its pin's URL when found, or
	// goes back to the queue when Pinterest lacks its pin, runs again and
	// ends pinned. The stand-in never fails a listing in the soak, so no
	// search fails and none may end unknown. Those the store no longer
	// keeps (it keeps the newest done jobs) cannot be checked.
	recovered := recoveredJobs(s.t, runs)
	how := resolutions(s.t, runs)
	res := soakResolved{running: len(recovered)}
	for ref := range recovered {
		switch how[ref] {
		case lookupFoundLog:
			res.found++
		case lookupAbsentLog:
			res.requeued++
		}
		j, ok := stored[ref]
		switch {
		case !ok:
			res.unkept++
		case j.state != persistence.JobDone:
			s.t.Errorf("job %d of account %s (%v) was found running after a kill, and is still %s at the end: never resolved", ref.id, ref.account, j.key, j.state)
		case j.result.Outcome == "":
			s.t.Errorf("job %d of account %s (%v) was found running after a kill, and ended with no result: its user is never told", ref.id, ref.account, j.key)
		case j.result.Outcome == "pinned" && made[j.key] == 0:
			s.t.Errorf("job %d of account %s (%v) was found running after a kill and ended pinned, but Pinterest does not hold its pin", ref.id, ref.account, j.key)
		case j.result.Outcome != "pinned":
			s.t.Errorf("job %d of account %s (%v) was found running after a kill, yet ended %s (%s): it must end pinned, found on Pinterest or run again once proven absent",
				ref.id, ref.account, j.key, j.result.Outcome, j.result.Why)
		case j.result.PinURL != pinURL[j.key]:
			s.t.Errorf("job %d of account %s (%v) was found running after a kill and ended pinned at %q, but Pinterest's pin is %s", ref.id, ref.account, j.key, j.result.PinURL, pinURL[j.key])
		case how[ref] == "":
			s.t.Errorf("job %d of account %s (%v) was found running after a kill and ended pinned, but no search on Pinterest resolved it", ref.id, ref.account, j.key)
		}
	}
	// Every job has ended (see soak.waitResolved).
	for ref, j := range stored {
		if j.state != persistence.JobDone {
			s.t.Errorf("job %d of account %s (%v) is %s at the end", ref.id, ref.account, j.key, j.state)
		}
	}
	var pinned, failed, still, lost int
	for k, q := range s.queued {
		if told[k] == "❔" {
			s.t.Errorf("%v, queued by %s in cycle %d, was reported \"may exist\": its outcome was never resolved", k, q.user.name, q.cycle)
		}
		if made[k] == 0 {
			s.t.Errorf("%v, queued by %s in cycle %d, was never made", k, q.user.name, q.cycle)
		}
		switch mark := told[k]; {
		case made[k] > 0:
			pinned++
		case mark == "❌" || mark == "❔":
			failed++
		case waiting[k] || inflight[k]:
			still++
		default:
			lost++
			why := "its job is gone"
			if r, ok := done[k]; ok {
				why = fmt.Sprintf("its job ended %s (%s) but the result never reached the user", r.Outcome, r.Why)
			}
			s.t.Errorf("%v, queued by %s from #%s in cycle %d, is lost: Pinterest does not hold it, nothing told %s, and it is not in the queue: %s",
				k, q.user.name, q.from.Name, q.cycle, q.user.name, why)
		}
	}
	// A job goes back to the queue only if its pin surely was not sent:
	// one waiting whose pin Pinterest holds would be sent again.
	for k := range waiting {
		if made[k] > 0 {
			s.t.Errorf("%v is on Pinterest, yet its job waits in the queue to be sent again", k)
		}
	}
	for k, mark := range told {
		if mark == "✅" && made[k] == 0 {
			s.t.Errorf("%v is reported pinned, but Pinterest does not hold it", k)
		}
	}
	s.t.Logf("audit: %d pins queued: %d made, %d reported failed or unknown, %d still queued (%d of them running), %d lost; %d result lines in DMs, %d in channels",
		len(s.queued), pinned, failed, still, running, lost, inDMs, inChannels)
	return res
}

// soakResolved is what became of the jobs found running after a kill.
type soakResolved struct {
	// running are the jobs found running; found those a search found on
	// Pinterest, requeued those it proved absent (sent again since);
	// unkept those the store no longer keeps.
	running, found, requeued, unkept int
}

// The messages of the bot's searches for a pin of unknown outcome
// (bot/resolve.go).
const (
	lookupFoundLog  = "pin of an unknown outcome found on Pinterest"
	lookupAbsentLog = "pin of an unknown outcome not on Pinterest: it was never made"
)

// resolutions returns how the first search on Pinterest after a job was
// found running resolved it (lookupFoundLog or lookupAbsentLog), from
// the lines the runs logged, in order.
func resolutions(t *testing.T, runs []*child) map[jobRef]string {
	t.Helper()
	out := map[jobRef]string{}
	pending := map[jobRef]bool{}
	for _, c := range runs {
		for line := range strings.Lines(c.stderr()) {
			var l struct {
				Account string          `json:"account"`
				Job     json.RawMessage `json:"job"`
				Message string          `json:"message"`
			}
			if !strings.Contains(line, `"job"`) || json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			// The engine logs the ID as a number, the bot's job context
			// as a string.
			id, err := strconv.ParseUint(strings.Trim(string(l.Job), `"`), 10, 64)
			if err != nil {
				continue
			}
			ref := jobRef{account: l.Account, id: id}
			switch {
			case strings.Contains(line, logRecovered):
				if _, done := out[ref]; !done {
					pending[ref] = true
				}
			case pending[ref] && (l.Message == lookupFoundLog || l.Message == lookupAbsentLog):
				out[ref] = l.Message
				delete(pending, ref)
			}
		}
	}
	return out
}

// results reads every result the bot delivered outside interactions
// (digests, by DM or in a channel), checks that each went where it
// belongs, and returns the mark of a result of each picture, and how many
// lines it read in DMs and in channels. A result belongs in the DMs of
// the user who queued the pin (the one user who pins the message it links
// to), or under their mention in the channel where their /pin ran: each
// /pin of the soak names messages of the channel it runs in, so that is
// the channel of the message the line links to. No queued pin may fail:
// a result that one failed is an error.
func (s *soak) results() (told map[pinKey]string, inDMs, inChannels int) {
	s.t.Helper()
	told = map[pinKey]string{}
	botID := s.dc.BotUserID()
	// read reads the result lines of m, delivered to the DMs of dmUser or,
	// when nil, to channel ch.
	read := func(m discordtest.Message, dmUser *soakUser, ch discordtest.Channel) {
		var mentioned *soakUser
		if mm := mentionAtStart.FindStringSubmatch(m.Content); mm != nil {
			id, _ := snowflake.Parse(mm[1])
			for _, u := range s.users {
				if u.id == id {
					mentioned = u
				}
			}
		}
		for line := range strings.Lines(m.Content) {
			mm := resultLine.FindStringSubmatch(line)
			if mm == nil {
				continue
			}
			line = strings.TrimSpace(line)
			msgCh, _ := snowflake.Parse(mm[3])
			msg, _ := snowflake.Parse(mm[4])
			image, _ := strconv.Atoi(mm[5])
			owner := s.pinners[msg]
			if owner == nil {
				s.t.Errorf("a result links to a message the soak never pinned: %q", line)
				continue
			}
			if am := accountInLine.FindStringSubmatch(line); am != nil && am[1] != owner.name {
				s.t.Errorf("the result of a pin of %s names the account of %s: %q", owner.name, am[1], line)
			}
			from := s.channel(msgCh)
			switch {
			case dmUser != nil:
				inDMs++
				if dmUser != owner {
					s.t.Errorf("the result of a pin of %s went to the DMs of %s: %q", owner.name, dmUser.name, line)
				}
			default:
				inChannels++
				if msgCh != ch.ID {
					s.t.Errorf("the result of a pin %s queued from #%s of %s went to #%s of %s: %q",
						owner.name, from.Name, s.guildName(from.GuildID), ch.Name, s.guildName(ch.GuildID), line)
				}
				if mentioned != owner {
					s.t.Errorf("the result of a pin of %s in #%s of %s is not under their mention: %q", owner.name, ch.Name, s.guildName(ch.GuildID), m.Content)
				}
			}
			if mm[1] == "❌" {
				s.t.Errorf("a queued pin of %s failed: %q", owner.name, line)
			}
			told[pinKey{account: owner.account, message: msg, image: image}] = mm[1]
		}
	}
	for _, ch := range s.chans {
		for _, m := range s.dc.Messages(ch.ID) {
			if m.AuthorID == botID && m.InteractionID == 0 {
				read(m, nil, ch)
			}
		}
	}
	for _, u := range s.users {
		for _, m := range s.dc.DMs(u.id) {
			read(m, u, discordtest.Channel{})
		}
	}
	return told, inDMs, inChannels
}

// guildName names one of the soak's guilds.
func (s *soak) guildName(id snowflake.ID) string {
	if name, ok := s.guilds[id]; ok {
		return name
	}
	return "guild " + id.String()
}

// jobRef names a job of the engine: its account and ID.
type jobRef struct {
	account string
	id      uint64
}

// storedJob is a queued pin left in the engine store: the picture, its
// state and, once done, what became of it.
type storedJob struct {
	key    pinKey
	state  persistence.JobState
	result bot.QueuedPinResult
}

// storedJobs reads the queued pins left in the engine store of data
// directory dir, the bot stopped.
func (s *soak) storedJobs(dir layout) map[jobRef]storedJob {
	s.t.Helper()
	out := map[jobRef]storedJob{}
	store, err := openStore(dir.engine(), zerolog.Nop())
	if err != nil {
		s.t.Fatalf("opening the engine store after the run: %v", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			s.t.Error(err)
		}
	}()
	err = store.JobAccounts(s.t.Context(), func(account string) error {
		jobs, err := store.Jobs(s.t.Context(), account)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			info, err := bot.DescribeQueuedPin(j.Payload)
			if err != nil {
				s.t.Errorf("queued pin %d of account %s: %v", j.ID, account, err)
				continue
			}
			msg, err := snowflake.Parse(info.MessageURL[strings.LastIndexByte(info.MessageURL, '/')+1:])
			if err != nil {
				s.t.Errorf("queued pin %d of account %s links to %q", j.ID, account, info.MessageURL)
				continue
			}
			sj := storedJob{key: pinKey{account: account, message: msg, image: info.Image}, state: j.State}
			if j.State == persistence.JobDone {
				sj.result, _ = bot.DescribeQueuedPinResult(j.Result)
			}
			out[jobRef{account: account, id: j.ID}] = sj
		}
		return nil
	})
	if err != nil {
		s.t.Errorf("reading the queue left in the engine store: %v", err)
	}
	return out
}

// recoveredJobs returns the jobs the starts of runs found running, left
// by a run killed while they ran, from the line each start logs.
func recoveredJobs(t *testing.T, runs []*child) map[jobRef]bool {
	t.Helper()
	out := map[jobRef]bool{}
	for _, c := range runs {
		for line := range strings.Lines(c.stderr()) {
			if !strings.Contains(line, logRecovered) {
				continue
			}
			var l struct {
				Account string `json:"account"`
				Job     uint64 `json:"job"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil || l.Account == "" || l.Job == 0 {
				t.Errorf("a line on a job found running names no account and job: %s (%v)", line, err)
				continue
			}
			out[jobRef{account: l.Account, id: l.Job}] = true
		}
	}
	return out
}
