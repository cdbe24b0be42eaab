package digest

import (
	"context"
	"errors"
	"fmt"

	"github.com/disgoorg/snowflake/v2"
)

// Key names a result line: the account and ID of the job whose result it
// tells. The zero Key names none: such a line is never kept in an Outbox.
type Key struct {
	Account string
	Job     uint64
}

// IsZero reports whether k names no line.
func (k Key) IsZero() bool { return k == Key{} }

func (k Key) String() string { return fmt.Sprintf("%s/%d", k.Account, k.Job) }

// Line is a result for a user, to go out in their next digest.
type Line struct {
	// Key names the line in the Outbox; zero for a line kept in memory
	// only.
	Key Key
	// User is who the line is for.
	User snowflake.ID
	// Guild and Channel are where the user ran the command: the only
	// channel the line may go to when their DMs are closed, and only
	// while they may read it. Zero for none.
	Guild, Channel snowflake.ID
	// Text is the line as the user reads it.
	Text string
}

// Outbox keeps lines durably until Discord has accepted a message
// carrying them, so that results finished but not yet sent survive a
// crash (Sender.Keep, Sender.Resume). Its methods may block on I/O and
// are called without the Sender's lock held. An Outbox is safe for
// simultaneous use.
type Outbox interface {
	// Put stores l durably, unless a line with its key is stored
	// already, and returns the line stored under the key: l, or the one
	// stored first.
	Put(ctx context.Context, l Line) (Line, error)
	// Delete removes the lines with these keys; a key not stored is no
	// error.
	Delete(ctx context.Context, keys []Key) error
	// Lines calls fn with every stored line until fn returns an error,
	// which Lines then returns. A stored line that cannot be read is
	// skipped, and reported in the error once every other was seen.
	Lines(ctx context.Context, fn func(Line) error) error
}

// SharedOutbox is an Outbox that several processes (the members of a
// cluster) use at once, each under an id of its own that it keeps across
// restarts. Each line records the process that keeps it: Put stores a
// line as this process's, and a process sends only the lines it keeps,
// so that no line is sent by two processes. A line of a process that no
// longer runs is taken over by another through Claim.
type SharedOutbox interface {
	Outbox
	// Put stores l as this process's, unless a line with its key is
	// stored already, and returns the line stored under the key: l, or
	// the one stored first. A stored line of a process that no longer
	// runs is claimed as Claim does; one that another running process
	// keeps is returned with an error wrapping ErrElsewhere: that
	// process sends it.
	Put(ctx context.Context, l Line) (Line, error)
	// Claim takes for this process the lines kept by processes that no
	// longer run and, when own is true, the lines kept under this
	// process's id (by an earlier run), and calls fn with each line
	// taken, until fn returns an error, which Claim then returns. Each
	// line is taken by a compare-and-swap: of processes claiming one
	// line at once, one takes it. A stored line that cannot be read is
	// skipped, and reported in the error once every other was seen.
	Claim(ctx context.Context, own bool, fn func(Line) error) error
}

// ErrElsewhere is wrapped by the error of SharedOutbox.Put when the line
// stored under the key is another running process's to send.
var ErrElsewhere = errors.New("digest: the line is kept by another process")

// Access tells whether a user may read a channel: a digest goes to a
// channel, when the user's DMs are closed, only while they may, so that
// their results never show where they could not read them.
type Access interface {
	// CanRead reports whether userID may view channelID, a channel of
	// guildID, and read its history. A channel of another guild, or one
	// that no longer exists, is false without error; an error means
	// the answer could not be found out, and the Sender asks again later.
	CanRead(ctx context.Context, guildID, channelID, userID snowflake.ID) (bool, error)
}

// Option sets what a Sender depends on beyond Discord's API.
type Option func(*Sender)

// WithOutbox makes the Sender keep its lines in o until Discord accepts
// them: Keep stores them, Resume loads them, and each is deleted once a
// message carrying it was accepted, or once it is given up for good
// (Discord refused it, or no place may show it). A line given up after
// passing failures (every try failed, Close gave up) stays for the next
// Resume. Without an Outbox, lines live in memory only.
//
// When o is a SharedOutbox, the Sender sends only the lines this process
// keeps: Resume claims the lines kept under its id and those of
// processes that no longer run, and every Config.Adopt the Sender claims
// again the lines of processes gone since, and sends them.
func WithOutbox(o Outbox) Option {
	return func(s *Sender) {
		s.outbox = o
		s.shared, _ = o.(SharedOutbox)
	}
}

// WithAccess makes the Sender ask a before it posts a user's lines in
// the channel where they ran the command (their DMs closed). Without it,
// no digest goes to a channel: the results of users whose DMs are closed
// remain in /queue only.
func WithAccess(a Access) Option { return func(s *Sender) { s.access = a } }

// checkLine reports what makes l unfit to keep.
func checkLine(l Line) error {
	switch {
	case l.Key.IsZero():
		return errors.New("no key")
	case l.Key.Account == "":
		return errors.New("no account in its key")
	case l.Key.Job == 0:
		return errors.New("no job ID in its key")
	case l.User == 0:
		return errors.New("no user")
	case l.Text == "":
		return errors.New("blank text")
	}
	return nil
}
