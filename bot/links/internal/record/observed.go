package record

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// ObservedKey is the key of the Observed of accountID.
func ObservedKey(accountID string) string { return ObservedPrefix + accountID }

// Observed is stored under e/<account id>: the pins the account made
// outside pinbot that the engine counts (see links.Observations), latest
// Until first once Mark has run.
type Observed struct {
	V    int            `json:"v"`
	Pins []ObservedItem `json:"pins"`
}

// ObservedItem is one pin of an Observed; times are Unix ms.
type ObservedItem struct {
	ID      string `json:"id"`
	Created int64  `json:"c"`
	Until   int64  `json:"u"`
}

func (r *Observed) version() int { return r.V }

func (r *Observed) check() error {
	for _, p := range r.Pins {
		if err := links.CheckID("pin id", p.ID); err != nil {
			return err
		}
	}
	return nil
}

// CheckUnobserved checks the arguments of links.Observations.Unobserved.
func CheckUnobserved(accountID string, pinIDs []string) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	for _, id := range pinIDs {
		if err := links.CheckID("pin id", id); err != nil {
			return err
		}
	}
	return nil
}

// Unobserved returns, of pinIDs, those the record does not hold, in the
// order given and each once.
func (r *Observed) Unobserved(pinIDs []string) []string {
	seen := make(map[string]bool, len(r.Pins)+len(pinIDs))
	for _, p := range r.Pins {
		seen[p.ID] = true
	}
	var out []string
	for _, id := range pinIDs {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// CheckObserved checks the arguments of links.Observations.MarkObserved.
func CheckObserved(accountID string, pins []links.ObservedPin) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	for _, p := range pins {
		if err := links.CheckID("pin id", p.ID); err != nil {
			return err
		}
		if p.Until.IsZero() {
			return fmt.Errorf("%w: pin %s has no Until", links.ErrInvalid, p.ID)
		}
	}
	return nil
}

// Mark adds pins to the record (a pin held already keeps the later
// Until), drops those whose Until is at or before now, and keeps at most
// links.MaxObservedPerAccount, those with the latest Until, latest
// first. It reports whether the record changed.
func (r *Observed) Mark(pins []links.ObservedPin, now time.Time) bool {
	changed := false
	byID := make(map[string]ObservedItem, len(r.Pins)+len(pins))
	for _, p := range r.Pins {
		byID[p.ID] = p
	}
	for _, p := range pins {
		it := ObservedItem{ID: p.ID, Created: p.CreatedAt.UnixMilli(), Until: p.Until.UnixMilli()}
		if old, ok := byID[p.ID]; ok && old.Until >= it.Until {
			continue
		}
		byID[p.ID] = it
		changed = true
	}
	cut := now.UnixMilli()
	kept := make([]ObservedItem, 0, len(byID))
	for _, p := range byID {
		if p.Until > cut {
			kept = append(kept, p)
		}
	}
	// Latest Until first, so that the bound drops the earliest.
	slices.SortFunc(kept, func(a, b ObservedItem) int { return cmp.Or(cmp.Compare(b.Until, a.Until), cmp.Compare(a.ID, b.ID)) })
	kept = kept[:min(len(kept), links.MaxObservedPerAccount)]
	if len(kept) != len(byID) {
		changed = true
	}
	r.V, r.Pins = Version, kept
	return changed
}

// Remaining is how long from now the latest Until of the record is
// ahead, after Mark; 0 when it holds no pin.
func (r *Observed) Remaining(now time.Time) time.Duration {
	if len(r.Pins) == 0 {
		return 0
	}
	return time.Duration(r.Pins[0].Until-now.UnixMilli()) * time.Millisecond
}
