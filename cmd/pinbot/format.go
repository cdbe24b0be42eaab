package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pinbot/pinbot/bot"
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
