package bot

import (
	"fmt"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// What users read. The rate-limit texts are the spec's, word for word,
// under the default rule (see pinRule).
const (
	msgNoAccount        = "You have not linked a Pinterest account yet. Run /link to connect one."
	msgActiveNotLinked  = "Your active Pinterest account is no longer linked to you. Pick one of your accounts in /settings, or run /link."
	msgLinksUnavailable = "Pinbot cannot read your linked accounts right now. Please try again in a few minutes."
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

// pinCount is the count shown after each pin: "12-hour pin count: X/100".
func (r pinRule) pinCount(used, limit int) string {
	return fmt.Sprintf("%s pin count: %d/%d", r.adj, used, limit)
}

// pinsLine is the count shown in /settings and on switching accounts:
// "12-hour pins: X/100".
func (r pinRule) pinsLine(used, limit int) string {
	return fmt.Sprintf("%s pins: %d/%d", r.adj, used, limit)
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
	return fmt.Sprintf("Pin limit reached (%d/%s), so nothing was pinned with %s: the next slot frees %s.%s You can switch to another account in /settings.",
		r.limit, r.short, name, relTime(nextFree(st)), changedNote(st))
}

// limitStop says that the limit stopped a batch, and when the next slot
// frees: the spec's text once something was pinned.
func (r pinRule) limitStop(st actors.Status, pinnedAny bool) string {
	msg := r.limitNothingPinned()
	if pinnedAny {
		msg = r.limitReached()
	}
	return msg + " The next slot frees " + relTime(nextFree(st)) + "." + changedNote(st)
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
	return " Pinbot's limit was changed recently, or its data restored from a backup, and the pins made before still count under the earlier rule."
}

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
	return fmt.Sprintf("Pinterest asked Pinbot to pause pinning with %s, so nothing more was pinned. It can pin again %s.", name, relTime(nextFree(st)))
}
