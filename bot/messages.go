package bot

import (
	"fmt"
	"strings"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// What users read. The rate-limit texts are the spec's, word for word,
// under the default rule (see pinRule).
const (
	msgNoAccount        = "You have not linked a Pinterest account yet. Run /link to connect one."
	msgActiveNotLinked  = "Your active Pinterest account is no longer linked to you. Pick one of your accounts in /settings, or run /link."
	msgLinksUnavailable = "Pinbot cannot read your linked accounts right now. Please try again in a few minutes."
	msgMovedMidBatch    = "Pinbot began moving your Pinterest account between its servers, so nothing more was pinned. Please try again in a few seconds."
	msgEngineDown       = "Pinbot cannot record pins right now (its storage is unavailable), so nothing more was pinned. Please try again later."
	msgPinterestDown    = "Pinterest is not answering right now, so nothing more was pinned. Please try again later."
	msgGuildOnly        = "Use this command in a server, on messages of that server."
	msgUnknownCommand   = "Pinbot does not know this command or button any more. Run /settings or /pin again."
	msgNotLinked        = "You have not linked that Pinterest account, so Pinbot will not use it for you. Run /link to connect it."
	msgRestarting       = "Pinbot is restarting, so this command was not run. Please run it again in a minute."
	msgMaxAccounts      = "You have linked the most accounts Pinbot keeps per user. Run /unlink on one before linking another."
)

// The spec's texts, which follow the engine's rule (see pinRule): these
// are under the defaults.

// limitReached is shown when the limit stops a batch after some pins:
// "Pin limit reached (100/12h). Skipped remaining pins."
func (r pinRule) limitReached() string {
	return fmt.Sprintf("Pin limit reached (%d/%s). Skipped remaining pins.", r.limit, r.short)
}

// limitNothingPinned is shown when the limit stops a batch before any
// pin, when there were no pins to skip the rest of: "Pin limit reached
// (100/12h), so nothing was pinned."
func (r pinRule) limitNothingPinned() string {
	return fmt.Sprintf("Pin limit reached (%d/%s), so nothing was pinned.", r.limit, r.short)
}

// pinCount is the count shown after each pin: "12-hour pin count: X/100"
// (see counted for X).
func (r pinRule) pinCount(st actors.Status) string {
	return fmt.Sprintf("%s pin count: %d/%d%s", r.adj, counted(st), st.Limit, earlierNote(st))
}

// pinsLine is the count shown in /settings, /queue and on switching
// accounts: "12-hour pins: X/100" (see counted for X).
func (r pinRule) pinsLine(st actors.Status) string {
	return fmt.Sprintf("%s pins: %d/%d%s", r.adj, counted(st), st.Limit, earlierNote(st))
}

// counted is the count shown of an account: the slots in use and those
// an earlier rule still holds (actors.Status.Blocked), as /pin refuses
// both: 2 in use and 2 held of 5 read "4/5".
func counted(st actors.Status) int { return min(st.Used+st.Blocked, st.Limit) }

// earlierNote says how much of a count an earlier rule holds, "" when
// none: " (2 of them under the earlier rule)". changedNote says what the
// earlier rule is.
func earlierNote(st actors.Status) string {
	if st.Blocked <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them under the earlier rule)", min(st.Blocked, st.Limit))
}

// pinsUnknown stands for pinsLine when the count cannot be read.
func (r pinRule) pinsUnknown() string { return r.adj + " pins: unknown" }

// msgRelink tells the user the account needs a new authorization.
func msgRelink(name string) string {
	return fmt.Sprintf("Pinterest no longer accepts Pinbot's access to %s. Run /link to connect it again; nothing more was pinned.", name)
}

// msgNoBoard asks the user to choose a board.
func msgNoBoard(name string) string {
	return fmt.Sprintf("No board chosen for %s. Pick a default board in /settings, or name one with the board: option of /pin.", name)
}

// msgUnknownBoard says the board option names no board of the account.
func msgUnknownBoard(board, name string) string {
	return fmt.Sprintf("`%s` is not one of %s's boards. Pick one from the list while typing the board: option, or choose a default board in /settings.", quoteInput(board), name)
}

// atLimit refuses a whole batch before it starts.
func (r pinRule) atLimit(st actors.Status, name string) string {
	return fmt.Sprintf("Pin limit reached (%d/%s), so nothing was pinned with %s: the next slot frees at %s.%s You can switch to another account in /settings.",
		r.limit, r.short, name, timeText(nextFree(st)), changedNote(st))
}

// limitStop says that the limit stopped a batch, and when the next slot
// frees: the spec's text once something was pinned.
func (r pinRule) limitStop(st actors.Status, pinnedAny bool) string {
	msg := r.limitNothingPinned()
	if pinnedAny {
		msg = r.limitReached()
	}
	return msg + " The next slot frees at " + timeText(nextFree(st)) + "." + changedNote(st)
}

// refusedStop says why the engine granted a batch no more slots, as
// limitStop does: Pinterest's hold when it holds an account with free
// slots, the limit otherwise.
func (r pinRule) refusedStop(st actors.Status, name string, pinnedAny bool) string {
	if held(st) {
		return msgHeld(st, name)
	}
	return r.limitStop(st, pinnedAny)
}

// queuedStop says that the engine granted a batch no more slots and n of
// its remaining pictures, of asked, were queued instead of skipped, and
// when the first and the last of them start: "Pin limit reached
// (100/12h). Queued the remaining 4 pins: the first starts at <t:…:T>
// (<t:…:R>), the last at <t:…:T> (<t:…:R>)."
func (r pinRule) queuedStop(st actors.Status, name string, pinnedAny bool, n, asked int, first, last time.Time) string {
	var sb strings.Builder
	switch {
	case held(st):
		fmt.Fprintf(&sb, "Pinterest asked Pinbot to pause pinning with %s, so nothing more was pinned.", name)
	case pinnedAny:
		fmt.Fprintf(&sb, "Pin limit reached (%d/%s).", r.limit, r.short)
	default:
		sb.WriteString(r.limitNothingPinned())
	}
	pins := countText(n, "pin", "pins")
	switch {
	case n < asked && pinnedAny:
		pins = fmt.Sprintf("%d of the remaining %d pins", n, asked)
	case n < asked:
		pins = fmt.Sprintf("%d of %d pins", n, asked)
	case pinnedAny && n == 1:
		pins = "the remaining pin"
	case pinnedAny:
		pins = "the remaining " + pins
	}
	if n == 1 {
		fmt.Fprintf(&sb, " Queued %s: it starts at %s.", pins, timeText(first))
	} else {
		fmt.Fprintf(&sb, " Queued %s: the first starts at %s, the last at %s.", pins, timeText(first), timeText(last))
	}
	if !held(st) {
		sb.WriteString(changedNote(st))
	}
	return sb.String()
}

// changedNote explains a refusal that the current limit alone would not
// make: the limit or the window was changed, or the data was restored
// from a backup (which holds every account until the pins it cannot know
// have left their window), and an earlier rule still counts (see
// actors.Status.Blocked). It is "" otherwise.
func changedNote(st actors.Status) string {
	if st.Blocked == 0 {
		return ""
	}
	return " " + msgEarlierRule
}

// msgEarlierRule says why an earlier rule still counts (see changedNote).
const msgEarlierRule = "Pinbot's limit was changed recently, or its data restored from a backup, and the pins made before still count under the earlier rule."

// nextFree is when the account's next slot frees, never before the
// status was taken.
func nextFree(st actors.Status) time.Time {
	if st.NextFree.Before(st.At) {
		return st.At
	}
	return st.NextFree
}

// held reports whether the account has free slots yet none may be used
// before NextFree: Pinterest answered 429 and the engine holds it.
func held(st actors.Status) bool {
	return st.Free() > 0 && st.NextFree.After(st.At)
}

// full reports whether the limit leaves the account no free slot.
func full(st actors.Status) bool { return st.Free() == 0 }

// msgHeld refuses pins while Pinterest's rate limit holds the account.
func msgHeld(st actors.Status, name string) string {
	return fmt.Sprintf("Pinterest asked Pinbot to pause pinning with %s, so nothing more was pinned. It can pin again at %s.", name, timeText(nextFree(st)))
}
