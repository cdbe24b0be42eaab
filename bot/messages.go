package bot

import (
	"fmt"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// What users read. The rate-limit texts are the spec's, word for word.
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

// spec texts.
const (
	// msgLimitReached is shown when the limit stops a batch after some
	// pins.
	msgLimitReached = "Pin limit reached (100/12h). Skipped remaining pins."
	// msgLimitNothingPinned is shown when the limit stops a batch before
	// any pin: there were no pins to skip the rest of.
	msgLimitNothingPinned = "Pin limit reached (100/12h), so nothing was pinned."
)

// pinCount is the count shown after each pin.
func pinCount(used, limit int) string {
	return fmt.Sprintf("12-hour pin count: %d/%d", used, limit)
}

// pinsLine is the count shown in /settings and on switching accounts.
func pinsLine(used, limit int) string {
	return fmt.Sprintf("12-hour pins: %d/%d", used, limit)
}

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

// msgAtLimit refuses a whole batch before it starts.
func msgAtLimit(st actors.Status, name string) string {
	return fmt.Sprintf("Pin limit reached (100/12h), so nothing was pinned with %s: the next slot frees %s. You can switch to another account in /settings.",
		name, relTime(nextFree(st)))
}

// msgLimitStop says that the limit stopped a batch, and when the next
// slot frees: the spec's text once something was pinned.
func msgLimitStop(st actors.Status, pinnedAny bool) string {
	msg := msgLimitNothingPinned
	if pinnedAny {
		msg = msgLimitReached
	}
	return msg + " The next slot frees " + relTime(nextFree(st)) + "."
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
	return st.Used < st.Limit && st.NextFree.After(st.At)
}

// msgHeld refuses pins while Pinterest's rate limit holds the account.
func msgHeld(st actors.Status, name string) string {
	return fmt.Sprintf("Pinterest asked Pinbot to pause pinning with %s, so nothing more was pinned. It can pin again %s.", name, relTime(nextFree(st)))
}
