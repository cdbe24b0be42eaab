package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// seedDiscord fills the Discord stand-in with the demo server, its
// channels, users and messages.
func (s *Sandbox) seedDiscord() error {
	dc := s.discord
	if _, err := dc.AddGuild(discordtest.Guild{ID: GuildID, Name: "Pinbot sandbox"}); err != nil {
		return fmt.Errorf("sandbox: demo server: %w", err)
	}
	if _, err := dc.AddRole(discordtest.Role{ID: ModsRoleID, GuildID: GuildID, Name: "mods", Permissions: modsPermissions}); err != nil {
		return fmt.Errorf("sandbox: mods role: %w", err)
	}
	for _, u := range users {
		m := discordtest.Member{GuildID: GuildID, UserID: u.ID, Username: u.Name}
		if u.Mod {
			m.Roles = append(m.Roles, ModsRoleID)
		}
		if _, err := dc.AddMember(m); err != nil {
			return fmt.Errorf("sandbox: user %s: %w", u.Name, err)
		}
	}
	read := discord.PermissionViewChannel | discord.PermissionReadMessageHistory
	for _, c := range channels {
		ch := discordtest.Channel{ID: c.ID, GuildID: GuildID, Name: c.Name}
		if c.ModsOnly {
			ch.Overwrites = []discordtest.Overwrite{
				discordtest.RoleOverwrite(GuildID, 0, discord.PermissionViewChannel),
				discordtest.RoleOverwrite(ModsRoleID, read, 0),
				discordtest.MemberOverwrite(dc.BotUserID(), read, 0),
			}
		}
		if _, err := dc.AddChannel(ch); err != nil {
			return fmt.Errorf("sandbox: channel #%s: %w", c.Name, err)
		}
	}
	for _, m := range messages {
		msg := discordtest.Message{ID: m.ID, ChannelID: m.Channel, AuthorID: m.Author, Content: m.Content}
		for i, name := range m.Images {
			a := imageAttachment(name, s.images.url(m.ID.String(), name))
			// The same ID at every start, as a Discord attachment keeps
			// its own: a pin queued before a restart finds its picture.
			a.ID = demoAttachmentID(m.ID, i)
			msg.Attachments = append(msg.Attachments, a)
		}
		if m.Embed != "" {
			u := s.images.url(m.ID.String(), m.Embed)
			msg.Content += " " + u
			msg.Embeds = []discord.Embed{{
				Type:      discord.EmbedTypeImage,
				URL:       u,
				Thumbnail: &discord.EmbedResource{URL: u, ProxyURL: u, Width: imageWidth, Height: imageHeight},
			}}
		}
		if _, err := dc.AddMessage(msg); err != nil {
			return fmt.Errorf("sandbox: message %d: %w", m.ID, err)
		}
	}
	return nil
}

// demoAttachmentID is the ID of the i-th attachment of demo message msg:
// the demo messages' IDs are small, far below any ID the stand-in makes
// from its clock.
func demoAttachmentID(msg snowflake.ID, i int) snowflake.ID {
	return msg*100 + snowflake.ID(i) + 1
}

// imageAttachment is a PNG attachment of the demo size served at u.
func imageAttachment(name, u string) discordtest.Attachment {
	return discordtest.Attachment{
		Filename:    name,
		ContentType: "image/png",
		URL:         u,
		ProxyURL:    u,
		Width:       imageWidth,
		Height:      imageHeight,
	}
}

// seedLinks makes the token store's links usable with this run's
// Pinterest stand-in. At the first start (no user has linked anything)
// it links each demo user's accounts; at later starts it links again
// every (user, demo account) pair the store holds, since the stand-in does
// not know the tokens of an earlier run, then restores each user's active
// account. Every link goes through OAuth. Accounts without a default board
// get their first board.
func (s *Sandbox) seedLinks(ctx context.Context) error {
	var stored []links.User
	if err := s.links.Users(ctx, func(u links.User) error {
		stored = append(stored, u)
		return nil
	}); err != nil {
		return fmt.Errorf("sandbox: reading the links: %w", err)
	}
	if len(stored) == 0 {
		for _, u := range users {
			if len(u.Links) > 0 {
				stored = append(stored, links.User{ID: u.ID.String(), Active: u.Links[0], Accounts: u.Links})
			}
		}
		s.log.Info().Int("users", len(stored)).Msg("first start: linking the demo accounts")
	}
	for _, u := range stored {
		for _, id := range u.Accounts {
			a, ok := accountByID(id)
			if !ok {
				s.log.Warn().Str("user", u.ID).Str("account", id).Msg("not a demo account; its token cannot work")
				continue
			}
			if _, err := s.linkThroughOAuth(ctx, u.ID, a); err != nil {
				return err
			}
			if err := s.ensureBoard(ctx, u.ID, a); err != nil {
				return err
			}
		}
		if u.Active != "" {
			if err := s.links.SetActive(ctx, u.ID, u.Active); err != nil {
				return fmt.Errorf("sandbox: restoring the active account of user %s: %w", u.ID, err)
			}
		}
	}
	return nil
}

// ensureBoard gives the account its first board as default board when it
// has none, as the user would in /settings.
func (s *Sandbox) ensureBoard(ctx context.Context, userID string, a demoAccount) error {
	stored, err := s.links.Account(ctx, a.ID)
	if err != nil {
		return fmt.Errorf("sandbox: reading account %s: %w", a.ID, err)
	}
	if stored.DefaultBoard != "" || len(a.Boards) == 0 {
		return nil
	}
	b := a.Boards[0]
	if err := s.links.SetDefaultBoard(ctx, userID, a.ID, b.ID, b.Name); err != nil {
		return fmt.Errorf("sandbox: default board of account %s: %w", a.ID, err)
	}
	return nil
}

// linkThroughOAuth links the account to the user the way /link does: a
// state bound to the user, the authorization address, the Pinterest
// stand-in's approval, the bot's callback and its confirmation page. It
// returns the last page.
func (s *Sandbox) linkThroughOAuth(ctx context.Context, userID string, a demoAccount) (page, error) {
	state, err := s.links.NewState(ctx, userID, time.Now())
	if err != nil {
		return page{}, fmt.Errorf("sandbox: OAuth state for user %s: %w", userID, err)
	}
	return s.approve(ctx, s.client.AuthCodeURL(state), a, userID, nil)
}

// page is what the bot's callback showed in the browser.
type page struct {
	Status         int
	Title, Message string
}

// approve opens authURL, the Pinterest authorization address, in a new
// browser with the stand-in signed in as a: the stand-in grants access at
// once and redirects to the bot's callback, which shows its confirmation
// page. When the page asks, the browser signs in with Discord as the user
// userID; then it presses confirm. seen, when not nil, is told each page
// on the way. approve returns the last page, and fails when the link was
// not made.
func (s *Sandbox) approve(ctx context.Context, authURL string, a demoAccount, userID string, seen func(page)) (page, error) {
	s.approveMu.Lock()
	defer s.approveMu.Unlock()
	s.pinterest.SetLoggedIn(a.ID)
	b := webtest.NewBrowser(s.http)
	step := func(p webtest.Page, err error) (page, bool, error) {
		if err != nil {
			return page{}, false, fmt.Errorf("sandbox: linking @%s: %w", a.Username, err)
		}
		pg := page{Status: p.Status, Title: p.Title, Message: p.Message}
		if seen != nil {
			seen(pg)
		}
		return pg, p.Status == http.StatusOK, nil
	}
	p, err := b.Get(ctx, authURL)
	pg, ok, err := step(p, err)
	if err != nil || !ok || p.FormAction == "" {
		return pg, s.refused(a, pg, err)
	}
	if p.SignInURL != "" {
		id, perr := snowflake.Parse(userID)
		if perr == nil {
			perr = s.discord.SetOAuth2User(id)
		}
		if perr != nil {
			return pg, fmt.Errorf("sandbox: signing in with Discord as user %s: %w", userID, perr)
		}
		p, err = b.Get(ctx, p.SignInURL)
		if pg, ok, err = step(p, err); err != nil || !ok || !p.CanConfirm {
			return pg, s.refused(a, pg, err)
		}
	}
	p, err = b.Submit(ctx, p, webtest.Confirm)
	if pg, ok, err = step(p, err); err != nil || !ok || pg.Title != "Linked" {
		return pg, s.refused(a, pg, err)
	}
	s.log.Info().Str("account", a.ID).Msg("demo account linked through OAuth")
	return pg, nil
}

// refused is the error of a link that was not made: err, or the page
// that said why.
func (s *Sandbox) refused(a demoAccount, p page, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("sandbox: linking @%s: %w", a.Username, &linkError{page: p})
}

// linkError is a link the callback refused, with its page.
type linkError struct{ page page }

func (e *linkError) Error() string {
	msg := e.page.Message
	if msg == "" {
		msg = http.StatusText(e.page.Status)
	}
	return fmt.Sprintf("the callback answered %d: %s", e.page.Status, msg)
}

// parsePage reads the title and message of one of the callback's pages:
// the text of its <h1> and of its first paragraph.
func parsePage(body []byte) page {
	p := webtest.ParsePage(string(body), nil)
	return page{Title: p.Title, Message: p.Message}
}

// isLinkRefused reports whether err is a link the callback refused.
func isLinkRefused(err error) (page, bool) {
	var le *linkError
	if errors.As(err, &le) {
		return le.page, true
	}
	return page{}, false
}
