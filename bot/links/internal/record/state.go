package record

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// State is stored under s/<sha256 of the state>.
type State struct {
	V       int       `json:"v"`
	User    string    `json:"user"`
	Expires time.Time `json:"expires"`
	// Interaction and At are links.Request's: the /link interaction's
	// token, and when /link ran.
	Interaction string    `json:"interaction,omitempty"`
	At          time.Time `json:"at,omitzero"`
}

func (r *State) version() int { return r.V }

func (r *State) check() error {
	if err := links.CheckID("user id", r.User); err != nil {
		return err
	}
	return links.CheckInteraction(r.Interaction)
}

// NewState checks req and returns a new OAuth state, 256 random bits
// from crypto/rand, URL safe, and the record of req that expires at
// expires.
func NewState(req links.Request, expires time.Time) (string, *State, error) {
	if err := links.CheckID("user id", req.User); err != nil {
		return "", nil, err
	}
	if err := links.CheckInteraction(req.Interaction); err != nil {
		return "", nil, err
	}
	var b [links.StateBytes]byte
	rand.Read(b[:]) // crypto/rand.Read never returns an error
	rec := &State{V: Version, User: req.User, Expires: expires.Round(0).UTC(), Interaction: req.Interaction}
	if !req.At.IsZero() {
		rec.At = req.At.Round(0).UTC()
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), rec, nil
}

// StateHash is the SHA-256 of a state, in hex: states are stored under
// their digest, so that reading a store (even with its key) does not
// yield states that could still be used.
func StateHash(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// StateKey is the key of the State whose StateHash is hash.
func StateKey(hash string) string { return StatePrefix + hash }

// WellFormedState reports whether state looks like one NewState returns.
func WellFormedState(state string) bool {
	if len(state) != links.StateLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(state)
	return err == nil && len(b) == links.StateBytes
}

// Errors of links.States.ConsumeLinkState.
var (
	ErrStateMalformed = fmt.Errorf("%w: malformed", links.ErrStateInvalid)
	ErrStateUnknown   = fmt.Errorf("%w: never issued, already used, or purged", links.ErrStateInvalid)
)

// StateUnreadable is the error of a state whose record, corrupt by err,
// can never be used.
func StateUnreadable(err error) error {
	return fmt.Errorf("%w: %w", links.ErrStateInvalid, err)
}

// Consume returns the request of the state consumed at now, or an error
// wrapping links.ErrStateExpired when it expired before.
func (r *State) Consume(now time.Time) (links.Request, error) {
	if now.After(r.Expires) {
		return links.Request{}, fmt.Errorf("%w: expired at %s", links.ErrStateExpired, r.Expires.Format(time.RFC3339))
	}
	return links.Request{User: r.User, Interaction: r.Interaction, At: r.At}, nil
}
