package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// Outbox is a digest line not yet delivered, stored under
// o/<account id>/<job id, 20 digits>.
type Outbox struct {
	V       int          `json:"v"`
	User    snowflake.ID `json:"user"`
	Guild   snowflake.ID `json:"guild,omitempty"`
	Channel snowflake.ID `json:"channel,omitempty"`
	Text    string       `json:"text"`
	// Owner is the cluster member that keeps the line to send it; empty
	// outside a cluster (see digest.SharedOutbox).
	Owner string `json:"owner,omitempty"`
}

func (r *Outbox) version() int { return r.V }

func (r *Outbox) check() error {
	switch {
	case r.User == 0:
		return errors.New("no user")
	case r.Text == "":
		return errors.New("no text")
	case len(r.Text) > links.MaxOutboxLineLen:
		return fmt.Errorf("text of %d bytes, more than %d", len(r.Text), links.MaxOutboxLineLen)
	case !utf8.ValidString(r.Text):
		return errors.New("text is not valid UTF-8")
	}
	return nil
}

// NewOutbox returns the record of l. A line without a user or a text,
// with an invalid key or a text over links.MaxOutboxLineLen fails with
// links.ErrInvalid.
func NewOutbox(l digest.Line) (*Outbox, error) {
	if err := CheckOutboxKey(l.Key); err != nil {
		return nil, err
	}
	rec := &Outbox{V: Version, User: l.User, Guild: l.Guild, Channel: l.Channel, Text: l.Text}
	if err := rec.check(); err != nil {
		return nil, fmt.Errorf("%w: digest line %v: %w", links.ErrInvalid, l.Key, err)
	}
	return rec, nil
}

// Line returns the record as the line of key k.
func (r *Outbox) Line(k digest.Key) digest.Line {
	return digest.Line{Key: k, User: r.User, Guild: r.Guild, Channel: r.Channel, Text: r.Text}
}

// OutboxKey is the key of the line of k.
func OutboxKey(k digest.Key) string {
	return fmt.Sprintf("%s%s/%020d", OutboxPrefix, k.Account, k.Job)
}

// ParseOutboxKey reads the key of a line, without OutboxPrefix.
func ParseOutboxKey(id string) (digest.Key, error) {
	account, job, ok := strings.Cut(id, "/")
	if !ok {
		return digest.Key{}, errors.New("no job ID")
	}
	n, err := strconv.ParseUint(job, 10, 64)
	if err != nil || n == 0 {
		return digest.Key{}, fmt.Errorf("job ID %q is not a positive number", job)
	}
	if err := links.CheckID("account id", account); err != nil {
		return digest.Key{}, err
	}
	return digest.Key{Account: account, Job: n}, nil
}

// CheckOutboxKey reports a key that cannot be stored.
func CheckOutboxKey(k digest.Key) error {
	if err := links.CheckID("account id", k.Account); err != nil {
		return err
	}
	if k.Job == 0 {
		return fmt.Errorf("%w: job ID is 0", links.ErrInvalid)
	}
	return nil
}
