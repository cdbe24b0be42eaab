package dashboard

import (
	"strconv"
	"time"
)

// DriftReader reads what the reconciler (package internal/reconcile)
// last found of each account: what Pinterest's ledger lists against what
// pinbot counts. It must not block on anything slow: the page asks it
// for every account it shows.
type DriftReader interface {
	// Drift returns account's drift at its last reconciliation within
	// the window, and whether there is one.
	Drift(account string) (Drift, bool)
	// Largest returns up to n drifts that are not zero, the largest in
	// absolute value first.
	Largest(n int) []Drift
}

// Drift is one account's last reconciliation: the pins Pinterest listed
// in the window against those pinbot counted.
type Drift struct {
	Account string `json:"account"`
	// At is when it was measured (engine time).
	At time.Time `json:"at"`
	// Pinterest is how many pins Pinterest listed in the window (every
	// pin when CountAll, pinbot's own otherwise); Counted how many pinbot
	// counted as made, Pending its unresolved reservations.
	Pinterest int `json:"pinterest"`
	Counted   int `json:"counted"`
	Pending   int `json:"pending"`
	// Elsewhere is how many of the account's pins in the window were
	// made outside pinbot; CountAll says whether pinbot counts them
	// (PINBOT_COUNT_ALL_PINS).
	Elsewhere int  `json:"elsewhere"`
	CountAll  bool `json:"count_all"`
	// Drift is Pinterest less Counted, and Unexplained how much of a
	// positive one the rules do not explain.
	Drift       int `json:"drift"`
	Unexplained int `json:"unexplained"`
}

// Signed writes the drift with its sign: "+3", "0", "−2".
func (d Drift) Signed() string {
	switch {
	case d.Drift > 0:
		return "+" + strconv.Itoa(d.Drift)
	case d.Drift < 0:
		return "−" + strconv.Itoa(-d.Drift)
	}
	return "0"
}

// Class names the drift for the page's colours: "bad" when the rules do
// not explain it, "pos" or "neg" by its sign, "zero".
func (d Drift) Class() string {
	switch {
	case d.Unexplained > 0:
		return "bad"
	case d.Drift > 0:
		return "pos"
	case d.Drift < 0:
		return "neg"
	}
	return "zero"
}

// NotCounted is how many pins made elsewhere pinbot does not count.
func (d Drift) NotCounted() int {
	if d.CountAll {
		return 0
	}
	return d.Elsewhere
}

// Drifted is an account the drift list shows, named as the accounts
// lists name theirs.
type Drifted struct {
	Drift
	Username string   `json:"username,omitempty"`
	LinkedBy []string `json:"linked_by,omitempty"`
}

// drifts sets the drift of every account data shows, and lists the
// largest drifts.
func (d *Dashboard) drifts(data *Data) {
	if d.drift == nil {
		return
	}
	data.Reconciled = true
	for _, list := range [][]Account{data.Busiest, data.Queue} {
		for i := range list {
			if dr, ok := d.drift.Drift(list[i].Account); ok {
				list[i].Drift = &dr
			}
		}
	}
	for _, dr := range d.drift.Largest(d.top) {
		data.Drifted = append(data.Drifted, Drifted{Drift: dr})
	}
}
