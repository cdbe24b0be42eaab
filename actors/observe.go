package actors

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// ObservedID is the reservation ID of the journal events that record pins
// made outside pinbot (persistence.EventCommit with this ID, see
// Engine.Observe). Reservation IDs start at 1, so it never names one.
const ObservedID = 0

// observeArgs carries an Observe request to an actor: the pins' times,
// Unix ms of engine time.
type observeArgs struct {
	pins []int64
}

// Observe records pins that account made outside pinbot (in Pinterest's
// app, with another tool) at their creation times, engine time, so that
// they count against the limit as pinbot's own pins do, and returns the
// account's status with them. Each time is kept at or before now; a pin
// made a window ago or earlier (no rule in force counts it any more) is
// ignored. Observe does not recognise a pin recorded before: the caller
// records each pin once.
//
// The pins are journaled as commits of no reservation
// (persistence.EventCommit with ObservedID), which replay records as it
// records a commit whose reservation it does not know, and snapshots keep
// them as every pin: they survive restarts. Observe returns once they are
// durable; when the journal cannot write, the error wraps ErrUnavailable
// and the pins count all the same until the account's actor next loads
// its state, so that observing them again meanwhile counts them twice,
// never less.
//
// Like Window.Record, recording keeps an account's newest pins when its
// window is full; of the pins given, only the newest as many as the
// window holds are recorded. An account at its limit stays correct:
// whether a slot is free at any later instant depends only on its newest
// Limit pins (a slot frees when the Limit-th newest leaves the window),
// and the pins dropped are older than all of those. Nor are pinbot's own
// pins ever undercounted: each pin dropped while it still counts is
// matched by a newer pin made elsewhere, which counts at least as long.
func (e *Engine) Observe(ctx context.Context, account string, pins []time.Time) (Status, error) {
	ts := make([]int64, len(pins))
	for i, p := range pins {
		ts[i] = p.UnixMilli()
	}
	resp, err := e.call(ctx, account, request{op: opObserve, observe: &observeArgs{pins: ts}})
	return resp.status, err
}

// observe records the pins of an Observe request and answers it once they
// are durable.
func (a *accountActor) observe(m *request, now int64) {
	a.led.expire(now)
	ts := a.led.observable(now, m.observe.pins)
	if len(ts) == 0 {
		a.answer(m, response{status: a.status(now)})
		return
	}
	w := persistence.AccountWrite{Account: a.account, Events: make([]persistence.Event, 0, len(ts))}
	for _, t := range ts {
		a.led.observe(t)
		a.seq++
		a.sinceSnap++
		w.Events = append(w.Events, persistence.Event{Seq: a.seq, Kind: persistence.EventCommit, ID: ObservedID, At: t})
	}
	// No snapshot rides along: the next write that is due one carries it,
	// and a snapshot of a write that fails would claim events that are
	// not stored.
	w.ExpiresAt = a.expiry(now)
	a.appended = true
	if a.waiting > 0 {
		a.schedule(now) // the next slot frees later now
	}
	reply, st, account := m.reply, a.status(now), a.account
	a.replied = true // by the journal callback below
	a.journalWrite(w, now, func(err error) {
		if err != nil {
			err = fmt.Errorf("actors: account %q: observe: %w: %w", account, ErrUnavailable, err)
		}
		if reply != nil {
			reply <- response{status: st, err: err}
		}
	})
}

// observable returns, of the times ts of pins made elsewhere, those
// Observe records at now: each kept at or before now, those no rule in
// force counts any more left out, and of the rest only the newest as
// many as the window holds (older ones could only be dropped), oldest
// first.
func (l *ledger) observable(now int64, ts []int64) []int64 {
	out := make([]int64, 0, len(ts))
	for _, t := range ts {
		if t = min(t, now); t > now-l.win.width {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, cmp.Compare[int64])
	if over := len(out) - l.win.limit; over > 0 {
		out = out[over:]
	}
	return out
}

// observe records a pin made elsewhere at t, keeping the newest pins when
// the window is full (see Engine.Observe): unlike record, it never grows
// the window's ring.
func (l *ledger) observe(t int64) { l.win.Record(t) }
