package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/internal/control"
)

// windowAdjective names the window length w as an adjective, as the bot
// does: "12-hour", "90-minute" (bot.WindowAdjective).
func windowAdjective(w time.Duration) string { return bot.WindowAdjective(w) }

// windowShort names the window length w briefly, as the bot does: "12h",
// "1h30m" (bot.WindowShort).
func windowShort(w time.Duration) string { return bot.WindowShort(w) }

// windowNoun names the window length w as a noun: "12 hours", "hour",
// "90 minutes", "7 days".
func windowNoun(w time.Duration) string {
	adj := bot.WindowAdjective(w) // "12-hour"
	n, unit, _ := strings.Cut(adj, "-")
	if n == "1" {
		return unit
	}
	return n + " " + unit + "s"
}

// timeLayout is how absolute times are shown to people.
const timeLayout = "2006-01-02 15:04:05 MST"

// whenFree says when a slot frees, seen from at: "now", or
// "in 11h 59m 59s, at 2026-03-01 16:04:05 CET" (bot.FormatDuration). The
// wait is rounded up to the second, so a slot never appears to free
// before it does.
func whenFree(nextFree, at time.Time) string {
	wait := nextFree.Sub(at)
	if wait <= 0 {
		return "now"
	}
	wait = (wait + time.Second - 1).Truncate(time.Second)
	return fmt.Sprintf("in %s, at %s", bot.FormatDuration(wait), nextFree.Local().Format(timeLayout))
}

// displayAccount returns account as it should be printed: as is when it
// is made of visible characters only, quoted otherwise, so that spaces,
// control characters and invalid UTF-8 cannot garble a line or a table.
func displayAccount(account string) string {
	if account == "" {
		return `""`
	}
	for _, r := range account {
		if r == unicode.ReplacementChar || !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return strconv.Quote(account)
		}
	}
	return account
}

// exactLayout shows an instant to the millisecond, the engine's
// resolution: the start time of a queued pin is exact.
const exactLayout = "2006-01-02 15:04:05.000 MST"

// exactTime shows t to the millisecond with how far it is from ref: "2026-03-01
// 16:04:05.250 CET (in 2h 5m 1s)", "... (3m 2s ago)", "... (now)". A wait
// is rounded up to the second, so that nothing appears sooner than it is.
func exactTime(t, ref time.Time) string {
	return t.Local().Format(exactLayout) + " (" + relative(t, ref) + ")"
}

// relative says how far t is from ref, to the second: "in 5s", "2m ago",
// "now".
func relative(t, ref time.Time) string {
	switch d := t.Sub(ref); {
	case d > 0:
		return "in " + bot.FormatDuration((d + time.Second - 1).Truncate(time.Second))
	case d <= -time.Second:
		return bot.FormatDuration((-d).Truncate(time.Second)) + " ago"
	}
	return "now"
}

// freeText says how many slots /pin may take now, and why none or fewer
// than the limit leaves: "97", "0 (Pinterest asked to wait)", "2 (3
// held by an earlier rule)".
func freeText(a control.Account) string {
	switch {
	case a.Held:
		return "0 (Pinterest asked to wait)"
	case a.Blocked > 0:
		return fmt.Sprintf("%d (%d held by an earlier rule)", a.Free, a.Blocked)
	}
	return strconv.Itoa(a.Free)
}

// writeEarlierRules says why slots are held: the earlier rules in force
// at at, or, when they are not known, what makes one.
func writeEarlierRules(w io.Writer, rules []control.Rule, at time.Time) error {
	var b strings.Builder
	if len(rules) == 0 {
		b.WriteString("\nHeld: an earlier rule still counts the pins made under it, as /pin does: " +
			"the limit or the window was changed, or the data directory restored from a backup.\n")
	} else {
		b.WriteString("\nHeld: an earlier rule still counts the pins made under it, as /pin does:\n")
		for _, r := range rules {
			b.WriteString("  " + ruleText(r, at) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ruleText describes an earlier rule in force at at.
func ruleText(r control.Rule, at time.Time) string {
	until := r.Until.Local().Format(timeLayout) + " (" + relative(r.Until, at) + ")"
	if r.Restore() {
		return "no pin until " + until + ": the hold after the restore of a backup, whose later pins are unknown, for the accounts not yet rebuilt from Pinterest's listing"
	}
	return fmt.Sprintf("%d pins per %s until %s: the limit and window before they were changed", r.Limit, windowNoun(r.Window), until)
}
