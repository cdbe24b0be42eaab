package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/persistence"
)

// ErrUnknownAccount means the account asked for is neither stored in the
// engine's store nor linked.
var ErrUnknownAccount = errors.New("control: unknown account")

// peekWorkers is how many accounts ReadAccounts reads at once.
const peekWorkers = 8

// ReadTimeout bounds the reading of one account: its standing, or its
// queue. An account that does not answer in time is listed with the
// error.
const ReadTimeout = 30 * time.Second

// Source is what the listings are read from: the stores of a running
// pinbot, or those the command opened itself.
type Source struct {
	// Engine answers for the accounts' counts and queues. Required.
	Engine *actors.Engine
	// Store is Engine's store: it lists the stored accounts and, when it
	// is a persistence.RuleKeeper, the rules in force. Required.
	Store persistence.Store
	// Links names the accounts: their Pinterest usernames and the Discord
	// users who linked them. Nil when the token store cannot be read;
	// NoNames then says why, or is empty when there is no token store.
	Links   links.Directory
	NoNames string
	// Log receives what could not be read, tagged component=control.
	Log zerolog.Logger
}

// Rule is a limit in force: Limit pins in any Window. An earlier rule
// binds until Until; one of Limit 0 is the hold a restore puts on every
// account until the pins made after the backup have left their window.
type Rule struct {
	Limit  int           `json:"limit"`
	Window time.Duration `json:"window_ns"`
	Until  time.Time     `json:"until,omitzero"`
}

// Restore reports whether r is a restore's hold.
func (r Rule) Restore() bool { return r.Limit == 0 }

// Account is one account's standing, as /pin would find it at At.
type Account struct {
	ID string `json:"account"`
	// Username is the account's Pinterest username and LinkedBy the
	// Discord users who link it, in the order they linked it, when the
	// token store knows them.
	Username string   `json:"username,omitempty"`
	LinkedBy []string `json:"linked_by,omitempty"`
	// Used, Pending, Limit, Blocked and Queued are actors.Status's: Used
	// and Limit are the current rule's, Blocked the slots it leaves free
	// that an earlier rule still refuses.
	Used    int `json:"used"`
	Pending int `json:"pending"`
	Limit   int `json:"limit"`
	Blocked int `json:"blocked"`
	Queued  int `json:"queued"`
	// Free is how many slots /pin may take at At: none while Pinterest
	// holds the account (Held), else actors.Status.Free.
	Free int  `json:"free"`
	Held bool `json:"held"`
	// NextFree is when the next slot frees (At when one is free), At the
	// engine time of the reading.
	NextFree time.Time `json:"next_free"`
	At       time.Time `json:"at"`
	// Error, when not empty, says why the account could not be read;
	// the counts are then unset.
	Error string `json:"error,omitempty"`
}

// Accounts is the listing of every account the engine stores.
type Accounts struct {
	// At is the engine time of the listing; Rule the current rule and
	// Earlier the earlier rules still in force at At.
	At      time.Time `json:"at"`
	Rule    Rule      `json:"rule"`
	Earlier []Rule    `json:"earlier,omitempty"`
	// Accounts are in the order of their ids.
	Accounts []Account `json:"accounts"`
	// NoNames, when not empty, says why the usernames are missing.
	NoNames string `json:"no_names,omitempty"`
}

// Job states, as Job.State names them.
const (
	Running = "running"
	Waiting = "waiting"
	Done    = "done"
)

// Job is one queued pin of an account.
type Job struct {
	ID    uint64 `json:"id"`
	State string `json:"state"`
	// Enqueued is when it was queued; Due, for a waiting job, when the
	// engine will start it; Deadline, for a running one, the end of its
	// slot's lease; Finished when a done one ended.
	Enqueued time.Time `json:"enqueued"`
	Due      time.Time `json:"due,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// Recovered marks a running job a previous run left running: whether
	// its pin exists is unknown, and it is never sent again.
	Recovered bool `json:"recovered,omitempty"`
	// Pin is what it pins; nil when its payload cannot be read.
	Pin *Pin `json:"pin,omitempty"`
	// Result is what became of a done job; nil when none was recorded.
	Result *Result `json:"result,omitempty"`
}

// Pin is what a queued pin pins: a picture of a Discord message, to a
// board, for the user who queued it (bot.QueuedPinInfo).
type Pin struct {
	MessageURL string `json:"message_url"`
	Image      int    `json:"image"`
	Images     int    `json:"images"`
	User       string `json:"user"`
	Board      string `json:"board"`
	BoardName  string `json:"board_name,omitempty"`
}

// Result is what became of a queued pin (bot.QueuedPinResult).
type Result struct {
	Outcome string `json:"outcome"`
	PinURL  string `json:"pin_url,omitempty"`
	Why     string `json:"why,omitempty"`
}

// Jobs is the listing of one account's queue: its running jobs, its
// waiting ones in queue order, and the done ones the engine keeps, in the
// order they finished.
type Jobs struct {
	Rule    Rule    `json:"rule"`
	Earlier []Rule  `json:"earlier,omitempty"`
	Account Account `json:"account"`
	Jobs    []Job   `json:"jobs"`
	NoNames string  `json:"no_names,omitempty"`
}

// ReadAccounts lists every account src's store holds, with its standing
// and, when the token store can be read, its names. An account whose
// state cannot be read is listed with its error; ReadAccounts fails only
// when the accounts cannot be listed or ctx ends.
func ReadAccounts(ctx context.Context, src Source) (Accounts, error) {
	var ids []string
	if err := src.Store.Accounts(ctx, func(account string) error {
		ids = append(ids, account)
		return ctx.Err()
	}); err != nil {
		return Accounts{}, fmt.Errorf("listing the stored accounts: %w", err)
	}
	list := Accounts{At: src.Engine.Now().UTC(), Rule: currentRule(src.Engine), Accounts: make([]Account, len(ids)), NoNames: src.NoNames}
	list.Earlier = earlierRules(ctx, src, list.At)

	work := make(chan int)
	var wg sync.WaitGroup
	for range min(peekWorkers, len(ids)) {
		wg.Go(func() {
			for i := range work {
				pctx, cancel := context.WithTimeout(ctx, ReadTimeout)
				st, err := src.Engine.Peek(pctx, ids[i])
				cancel()
				list.Accounts[i] = account(ids[i], st, err)
			}
		})
	}
send:
	for i := range ids {
		select {
		case work <- i:
		case <-ctx.Done():
			break send
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Accounts{}, fmt.Errorf("listing the stored accounts: %w", err)
	}

	if src.Links != nil && len(ids) > 0 {
		names := map[string]int{}
		for i, id := range ids {
			names[id] = i
		}
		err := src.Links.AllAccountUsers(ctx, func(a links.Account, users []string) error {
			if i, ok := names[a.ID]; ok {
				list.Accounts[i].Username, list.Accounts[i].LinkedBy = a.Username, users
			}
			return nil
		})
		if err != nil {
			src.logger().Warn().Err(err).Msg("reading the token store failed: listing account ids only")
			list.NoNames = "reading the token store failed: " + err.Error()
			for i := range list.Accounts {
				list.Accounts[i].Username, list.Accounts[i].LinkedBy = "", nil
			}
		}
	}
	return list, nil
}

// ReadJobs lists the queue of one account: the account of id ref, or,
// when ref starts with "@", the linked account whose Pinterest username
// is the rest of ref (in any case). An account that is neither stored
// nor linked fails with an error wrapping ErrUnknownAccount.
func ReadJobs(ctx context.Context, src Source, ref string) (Jobs, error) {
	id, acct, users, noNames, err := resolve(ctx, src, ref)
	if err != nil {
		return Jobs{}, err
	}
	jctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	jobs, st, err := src.Engine.Jobs(jctx, id)
	if err != nil {
		return Jobs{}, fmt.Errorf("reading the queue of %s: %w", id, err)
	}
	out := Jobs{Rule: currentRule(src.Engine), Account: account(id, st, nil), Jobs: make([]Job, 0, len(jobs)), NoNames: noNames}
	out.Account.Username, out.Account.LinkedBy = acct.Username, users
	out.Earlier = earlierRules(ctx, src, st.At)
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, job(j))
	}
	return out, nil
}

// resolve finds the account ref names (see ReadJobs) and its names when
// the token store knows them, else why they are missing, if there is
// something to say.
func resolve(ctx context.Context, src Source, ref string) (id string, acct links.Account, users []string, noNames string, err error) {
	noNames = src.NoNames
	if name, ok := strings.CutPrefix(ref, "@"); ok {
		if src.Links == nil {
			why := src.NoNames
			if why == "" {
				why = "there is no token store"
			}
			return "", acct, nil, "", fmt.Errorf("cannot look up the username %s: %s", name, why)
		}
		errFound := errors.New("found")
		err := src.Links.AllAccountUsers(ctx, func(a links.Account, u []string) error {
			if strings.EqualFold(a.Username, name) {
				acct, users = a, u
				return errFound
			}
			return nil
		})
		switch {
		case errors.Is(err, errFound):
			return acct.ID, acct, users, noNames, nil
		case err != nil:
			return "", acct, nil, "", fmt.Errorf("reading the token store: %w", err)
		}
		return "", acct, nil, "", unknown("no linked account has the username %s", name)
	}
	if !persistence.ValidAccount(ref) {
		return "", acct, nil, "", unknown("%q is not an account id (1 to %d bytes, without NUL bytes)", ref, persistence.MaxAccountLen)
	}
	linked := false
	if src.Links != nil {
		acct, users, err = src.Links.AccountUsers(ctx, ref)
		switch {
		case err == nil:
			linked = true
		case errors.Is(err, links.ErrNoToken), errors.Is(err, links.ErrInvalid):
		default:
			// The queue can still be listed, without the names.
			src.logger().Warn().Err(err).Str("account", ref).Msg("reading the token store failed: listing the account's id only")
			noNames = "reading the token store failed: " + err.Error()
			acct, users = links.Account{}, nil
		}
	}
	if !linked {
		stored, err := storedAccount(ctx, src.Store, ref)
		if err != nil {
			return "", acct, nil, "", err
		}
		if !stored {
			return "", acct, nil, "", unknown("account %s is neither stored nor linked", ref)
		}
	}
	return ref, acct, users, noNames, nil
}

// unknown is an error that reads as format and args say and matches
// ErrUnknownAccount.
func unknown(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: ErrUnknownAccount}
}

// kindError is an error that reads as msg and matches kind.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// storedAccount reports whether store holds state or jobs of account.
func storedAccount(ctx context.Context, store persistence.Store, account string) (bool, error) {
	l, err := store.Load(ctx, account)
	if err != nil {
		return false, fmt.Errorf("reading account %s: %w", account, err)
	}
	if len(l.Events) > 0 || l.Snapshot.Seq > 0 || l.Snapshot.NextID > 0 {
		return true, nil
	}
	jobs, err := store.Jobs(ctx, account)
	if err != nil {
		return false, fmt.Errorf("reading the jobs of account %s: %w", account, err)
	}
	return len(jobs) > 0, nil
}

// account is the listing of a status read, or of the error that
// prevented it.
func account(id string, st actors.Status, err error) Account {
	if err != nil {
		return Account{ID: id, Error: err.Error()}
	}
	a := Account{
		ID: id, Used: st.Used, Pending: st.Pending, Limit: st.Limit, Blocked: st.Blocked, Queued: st.Queued,
		Free: st.Free(), NextFree: st.NextFree.UTC(), At: st.At.UTC(),
	}
	// Pinterest asked the account to wait: nothing may be granted before
	// NextFree, free slots or not (as /pin refuses).
	if a.Free > 0 && st.NextFree.After(st.At) {
		a.Free, a.Held = 0, true
	}
	return a
}

func job(j actors.Job) Job {
	out := Job{ID: j.ID, Enqueued: j.Enqueued.UTC(), Recovered: j.Recovered}
	switch j.State {
	case actors.JobRunning:
		out.State, out.Deadline = Running, utc(j.Slot.Deadline)
	case actors.JobWaiting:
		out.State, out.Due = Waiting, j.Due.UTC()
	default:
		out.State, out.Finished = Done, j.Finished.UTC()
		if r, ok := bot.DescribeQueuedPinResult(j.Result); ok {
			out.Result = &Result{Outcome: r.Outcome, PinURL: r.PinURL, Why: r.Why}
		}
	}
	if p, err := bot.DescribeQueuedPin(j.Payload); err == nil {
		out.Pin = &Pin{MessageURL: p.MessageURL, Image: p.Image, Images: p.Images, User: p.User, Board: p.Board, BoardName: p.BoardName}
	}
	return out
}

// utc returns t in UTC, the zero time as it is: every time of a listing
// is in UTC, whichever way it came.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// currentRule is the rule eng enforces.
func currentRule(eng *actors.Engine) Rule {
	cfg := eng.Config()
	return Rule{Limit: cfg.Limit, Window: cfg.Window}
}

// earlierRules returns the earlier rules src's store keeps that are
// still in force at at, ending first first; none when the store keeps no
// rules or they cannot be read (logged).
func earlierRules(ctx context.Context, src Source, at time.Time) []Rule {
	rk, ok := src.Store.(persistence.RuleKeeper)
	if !ok {
		return nil
	}
	rs, err := rk.Rules(ctx)
	if err != nil {
		src.logger().Warn().Err(err).Msg("reading the rules in force failed")
		return nil
	}
	var out []Rule
	for _, r := range rs.Earlier {
		until := time.UnixMilli(r.Until).UTC()
		if until.After(at) {
			out = append(out, Rule{Limit: r.Limit, Window: time.Duration(r.Window) * time.Millisecond, Until: until})
		}
	}
	slices.SortFunc(out, func(a, b Rule) int { return cmp.Or(a.Until.Compare(b.Until), cmp.Compare(a.Limit, b.Limit)) })
	return out
}

func (src Source) logger() *zerolog.Logger {
	l := src.Log.With().Str("component", "control").Logger()
	return &l
}
