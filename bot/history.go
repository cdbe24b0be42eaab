package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// Never the same picture twice: pinbot remembers, per account and board,
// which pictures it pinned (links.History), for Config.RememberPinsFor.
// Asked for one again, a command answers "already pinned" with the pin's
// address and uses no slot; /pin's again:true pins it all the same.

// DefaultRememberPinsFor is how long pinbot remembers a picture it pinned
// when Config.RememberPinsFor is zero.
const DefaultRememberPinsFor = 90 * 24 * time.Hour

// discordCDNHosts serve attachments under signed, expiring queries: the
// same picture has another address each time a message is fetched.
var discordCDNHosts = map[string]bool{"cdn.discordapp.com": true, "media.discordapp.net": true}

// imageKey is a picture's key in the history: its attachment, or its
// address without the signed query of Discord's CDN (nor a fragment),
// hashed to a bounded key.
func imageKey(attachment string, raw string) string {
	if attachment != "" {
		return "a" + attachment
	}
	if u, err := url.Parse(raw); err == nil {
		u.Fragment, u.RawFragment = "", ""
		if discordCDNHosts[strings.ToLower(u.Hostname())] {
			u.RawQuery, u.ForceQuery = "", false
		}
		raw = u.String()
	}
	h := sha256.Sum256([]byte(raw))
	return "u" + hex.EncodeToString(h[:16])
}

// remembering reports whether the history is on.
func (b *Bot) remembering() bool { return b.cfg.RememberPinsFor > 0 }

// pinnedBefore returns the address of the pin the picture of key became
// on board of account, if pinbot remembers one. A history that cannot be
// read is logged and taken as empty: the picture is pinned again rather
// than not at all.
func (b *Bot) pinnedBefore(ctx context.Context, account, board, key string) (string, bool) {
	if !b.remembering() || key == "" || board == "" {
		return "", false
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	got, err := b.cfg.Links.PinnedBefore(rctx, account, board, []string{key}, b.cfg.Engine.Now())
	if err != nil {
		b.logger(ctx).Warn().Err(err).Str("account", account).Msg("reading which pictures were pinned failed; pinning without checking")
		return "", false
	}
	u, ok := got[key]
	return u, ok
}

// rememberPinned records, in one durable write, that each picture of
// pins (key → the pin's address) became a pin on board of account: a
// command's pins together, after its batch, so that no pin waits for the
// write. A failure is logged: the pictures may be pinned again.
func (b *Bot) rememberPinned(ctx context.Context, account, board string, pins map[string]string) {
	if !b.remembering() || board == "" || len(pins) == 0 {
		return
	}
	until := b.cfg.Engine.Now().Add(b.cfg.RememberPinsFor)
	ps := make([]links.PinnedPicture, 0, len(pins))
	for key, u := range pins {
		if key != "" && u != "" {
			ps = append(ps, links.PinnedPicture{Key: key, PinURL: u, Until: until})
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	if err := b.cfg.Links.RememberPinned(rctx, account, board, ps); err != nil {
		b.logger(ctx).Warn().Err(err).Str("account", account).Msg("remembering pinned pictures failed; they may be pinned again")
	}
}
