package dashboard

import (
	"time"

	"github.com/pinbot/pinbot/actors"
)

// Data is what one view of the dashboard shows: the engine's survey and
// the metrics, read at one instant.
type Data struct {
	// At is the engine time of the survey (the wall clock's when the
	// survey failed); Limit and Window are the engine's current rule.
	At     time.Time     `json:"at"`
	Limit  int           `json:"limit"`
	Window time.Duration `json:"window_ns"`
	// Earlier are the rules in force before the last change of the limit
	// or the window, or the hold after a restore, that still count pins
	// at At: the slots they refuse are an account's Blocked ones.
	Earlier []Rule `json:"earlier,omitempty"`
	// Busiest are the accounts nearest their limit, most used first, and
	// Queue those with jobs waiting, most waiting first.
	Busiest []Account `json:"busiest"`
	Queue   []Account `json:"queue"`
	// Waiting is the number of jobs waiting on the examined accounts,
	// QueuedAccounts the number of accounts with jobs waiting in all.
	Waiting        int `json:"waiting"`
	QueuedAccounts int `json:"queued_accounts"`
	// Timeline counts the pins of the examined accounts that still count.
	Timeline Timeline `json:"timeline"`
	// Examined, Resident, Failed and Complete are the survey's (see
	// actors.Survey).
	Examined int  `json:"examined"`
	Resident int  `json:"resident"`
	Failed   int  `json:"failed"`
	Complete bool `json:"complete"`
	// Reconciled says that the dashboard has the reconciler's drifts
	// (Config.Drift); Drifted are the accounts with the largest drifts,
	// largest first.
	Reconciled bool      `json:"reconciled"`
	Drifted    []Drifted `json:"drifted,omitempty"`
	// Held are the linked accounts that stay held after a restore because
	// Pinterest's listing of their pins could not be read (Config.Held).
	Held []HeldAccount `json:"held_accounts,omitempty"`
	// Metrics are read from the gatherer, each part by name.
	Metrics Metrics `json:"metrics"`
	// Problems says what could not be read, for the page to show.
	Problems []string `json:"problems,omitempty"`
}

// Rule is an earlier rule in force: Limit pins in any Window, until
// Until. Limit 0 is the hold a restore puts on every account until the
// pins made after the backup have left their window; From, when not
// zero, is the restore's instant: an account whose window was rebuilt
// from Pinterest's listing since is no longer held by it.
type Rule struct {
	Limit  int           `json:"limit"`
	Window time.Duration `json:"window_ns"`
	Until  time.Time     `json:"until"`
	From   time.Time     `json:"from,omitzero"`
}

// Restore reports whether r is a restore's hold.
func (r Rule) Restore() bool { return r.Limit == 0 }

// Account is one account's standing, as the dashboard shows it.
type Account struct {
	Account string `json:"account"`
	// Username is the account's Pinterest username and LinkedBy the
	// Discord users who linked it, when known (Config.Names).
	Username string   `json:"username,omitempty"`
	LinkedBy []string `json:"linked_by,omitempty"`
	Used     int      `json:"used"`
	Limit    int      `json:"limit"`
	Pending  int      `json:"pending"`
	Blocked  int      `json:"blocked"`
	Queued   int      `json:"queued"`
	// NextFree is when the next slot frees (engine time); Free is how
	// many are free under the limit, and Held is set when some are but
	// none may be granted before NextFree (Pinterest asked to wait).
	NextFree time.Time `json:"next_free"`
	Free     int       `json:"free"`
	Held     bool      `json:"held"`
	// Drift is what the account's last reconciliation within the window
	// found (Config.Drift); nil when there was none.
	Drift *Drift `json:"drift,omitempty"`
}

// Share is the part of the limit in use, 0 to 1 (blocked slots count as
// in use).
func (a Account) Share() float64 {
	if a.Limit <= 0 {
		return 0
	}
	return min(float64(a.Used+a.Blocked)/float64(a.Limit), 1)
}

// Level names the account's standing for the page's colours: "full" with
// no slot free, "high" from 80% in use, else "ok".
func (a Account) Level() string {
	switch {
	case a.Free == 0:
		return "full"
	case a.Share() >= 0.8:
		return "high"
	}
	return "ok"
}

// Timeline counts pins by the instant they count from, in buckets of
// Bucket from Start.
type Timeline struct {
	Start  time.Time     `json:"start"`
	Bucket time.Duration `json:"bucket_ns"`
	Counts []int         `json:"counts"`
	Total  int           `json:"total"`
	Max    int           `json:"max"`
}

// assemble builds the page's data from a survey (or the error that
// prevented it) and the metrics read. now stands for the survey's instant
// when there is none.
func assemble(s actors.Survey, surveyErr error, m Metrics, problems []string, now time.Time) *Data {
	d := &Data{Metrics: m, Problems: problems}
	if surveyErr != nil {
		d.At = now
		d.Problems = append(d.Problems, "The engine could not be surveyed: "+surveyErr.Error())
		return d
	}
	d.At, d.Limit, d.Window = s.At, s.Limit, s.Window
	d.Busiest = accounts(s.Busiest)
	d.Queue = accounts(s.Queue)
	d.Waiting, d.QueuedAccounts = s.Waiting, s.QueuedAccounts
	d.Examined, d.Resident, d.Failed, d.Complete = s.Examined, s.Resident, s.Failed, s.Complete
	d.Timeline = Timeline{Start: s.Start, Bucket: s.Bucket, Counts: s.Timeline}
	for _, c := range s.Timeline {
		d.Timeline.Total += c
		d.Timeline.Max = max(d.Timeline.Max, c)
	}
	if s.Failed > 0 {
		d.Problems = append(d.Problems, plural(s.Failed, "account's state", "accounts' state")+" could not be read (see the log).")
	}
	return d
}

func accounts(sts []actors.Status) []Account {
	out := make([]Account, len(sts))
	for i, st := range sts {
		out[i] = Account{
			Account: st.Account, Used: st.Used, Limit: st.Limit, Pending: st.Pending,
			Blocked: st.Blocked, Queued: st.Queued, NextFree: st.NextFree, Free: st.Free(),
			Held: st.Free() > 0 && st.NextFree.After(st.At),
		}
	}
	return out
}
