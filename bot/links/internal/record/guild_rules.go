package record

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pinbot/pinbot/bot/links"
)

// AutopinKey is the key of the AutopinRules of guildID:
// g/<guild id>/autopin, under the server's prefix (see GuildKey).
func AutopinKey(guildID string) string { return GuildKey(guildID) + autopinSuffix }

const autopinSuffix = "/autopin"

// IsAutopinKey reports whether key (relative to a store's root) is that
// of a server's AutopinRules.
func IsAutopinKey(key string) bool {
	rest, ok := strings.CutPrefix(key, GuildPrefix)
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, autopinSuffix)
	return ok && id != "" && !strings.Contains(id, "/")
}

// AutopinRules is stored under g/<guild id>/autopin: a server's auto-pin
// rules (see links.GuildRules). A server without rules keeps no record.
type AutopinRules struct {
	V     int           `json:"v"`
	Rules []AutopinRule `json:"rules"`
}

// AutopinRule is one stored links.AutopinRule.
type AutopinRule struct {
	Channel   string `json:"c"`
	Owner     string `json:"u"`
	Account   string `json:"a"`
	Board     string `json:"b"`
	BoardName string `json:"bn,omitempty"`
	Paused    bool   `json:"p,omitempty"`
}

func (r *AutopinRules) version() int { return r.V }

func (r *AutopinRules) check() error { return CheckAutopinRules(r.List()) }

// NewAutopinRules returns the record of rules.
func NewAutopinRules(rules []links.AutopinRule) *AutopinRules {
	rec := &AutopinRules{V: Version, Rules: make([]AutopinRule, len(rules))}
	for i, r := range rules {
		rec.Rules[i] = AutopinRule{Channel: r.Channel, Owner: r.Owner, Account: r.Account, Board: r.Board, BoardName: r.BoardName, Paused: r.Paused}
	}
	return rec
}

// List returns the rules the record holds; nil when none.
func (r *AutopinRules) List() []links.AutopinRule {
	if len(r.Rules) == 0 {
		return nil
	}
	out := make([]links.AutopinRule, len(r.Rules))
	for i, x := range r.Rules {
		out[i] = links.AutopinRule{Channel: x.Channel, Owner: x.Owner, Account: x.Account, Board: x.Board, BoardName: x.BoardName, Paused: x.Paused}
	}
	return out
}

// CheckAutopinRules checks a server's rules as links.GuildRules stores
// them: at most links.MaxAutopinRules, one per channel, every id well
// formed, the board's name valid UTF-8 of at most links.MaxBoardNameLen
// bytes.
func CheckAutopinRules(rules []links.AutopinRule) error {
	if len(rules) > links.MaxAutopinRules {
		return fmt.Errorf("%w: %d auto-pin rules, more than %d", links.ErrInvalid, len(rules), links.MaxAutopinRules)
	}
	seen := make(map[string]bool, len(rules))
	for _, r := range rules {
		for _, f := range []struct{ kind, id string }{
			{"channel id", r.Channel}, {"user id", r.Owner}, {"account id", r.Account}, {"board id", r.Board},
		} {
			if err := links.CheckID(f.kind, f.id); err != nil {
				return err
			}
		}
		if seen[r.Channel] {
			return fmt.Errorf("%w: two auto-pin rules of channel %s", links.ErrInvalid, r.Channel)
		}
		seen[r.Channel] = true
		if len(r.BoardName) > links.MaxBoardNameLen || !utf8.ValidString(r.BoardName) {
			return fmt.Errorf("%w: board name of channel %s is not valid UTF-8 of at most %d bytes", links.ErrInvalid, r.Channel, links.MaxBoardNameLen)
		}
	}
	return nil
}
