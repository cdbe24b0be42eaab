package sandbox

import (
	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// IDs of the demo server. The Discord stand-in lets them be chosen, so
// they are short enough to type.
const (
	// GuildID is the demo server.
	GuildID snowflake.ID = 900
	// ModsRoleID is the role that may view #staff and manage the server.
	ModsRoleID snowflake.ID = 901
)

// modsPermissions are the mods role's server-wide permissions, beside
// @everyone's: /autopin add needs Manage Channels in the channel, /server
// Manage Server. Only the mods (bob) have them.
const modsPermissions = discord.PermissionManageChannels | discord.PermissionManageGuild

// demoAccount is a demo Pinterest account on the Pinterest stand-in.
type demoAccount struct {
	// ID is the Pinterest user_account id: the key of the rate limit.
	ID string
	// Username is the account's Pinterest username.
	Username string
	// Boards are the account's boards; the first is the default board the
	// sandbox chooses when it links the account for the first time.
	Boards []pinteresttest.Board
}

// demoUser is a demo Discord user.
type demoUser struct {
	ID   snowflake.ID
	Name string
	// Mod gives the mods role, which may view #staff and manage the
	// server and its channels.
	Mod bool
	// Links are the demo accounts the sandbox links for the user at the
	// first start, through OAuth; the first is the active one.
	Links []string
}

// demoChannel is a channel of the demo server.
type demoChannel struct {
	ID   snowflake.ID
	Name string
	// ModsOnly hides the channel from everyone but the mods role (and the
	// bot).
	ModsOnly bool
}

// demoMessage is a demo message.
type demoMessage struct {
	ID      snowflake.ID
	Channel snowflake.ID
	Author  snowflake.ID
	Content string
	// Images are the file names of its image attachments.
	Images []string
	// Embed, when not "", is the file name of an image linked in the
	// content, which Discord shows as an image embed.
	Embed string
	// About describes the message in the console's table.
	About string
}

// accounts are the demo Pinterest accounts.
var accounts = []demoAccount{
	{ID: "7001", Username: "alice_pins", Boards: []pinteresttest.Board{
		{ID: "70011", Name: "Cats"}, {ID: "70012", Name: "Travel"},
	}},
	{ID: "7002", Username: "alice_art", Boards: []pinteresttest.Board{
		{ID: "70021", Name: "Sketches"},
	}},
	{ID: "7003", Username: "studio_shared", Boards: []pinteresttest.Board{
		{ID: "70031", Name: "Studio"}, {ID: "70032", Name: "Moodboard"},
	}},
}

// users are the demo Discord users; the console starts as the first.
var users = []demoUser{
	{ID: 11, Name: "alice", Links: []string{"7001", "7002"}},
	{ID: 12, Name: "bob", Mod: true, Links: []string{"7003"}},
	{ID: 13, Name: "carol"},
}

// channels are the channels of the demo server; the console starts in
// the first.
var channels = []demoChannel{
	{ID: 100, Name: "general"},
	{ID: 200, Name: "art"},
	{ID: 300, Name: "staff", ModsOnly: true},
}

// messages are the demo messages.
var messages = []demoMessage{
	{ID: 1001, Channel: 100, Author: 12, Content: "Sunset from the pier", Images: []string{"sunset.png"}, About: "one image"},
	{ID: 1002, Channel: 100, Author: 11, Content: "Two cats, one sofa", Images: []string{"cat-1.png", "cat-2.png"}, About: "two images"},
	{ID: 1003, Channel: 100, Author: 13, Content: "Look at this one", Embed: "lighthouse.png", About: "an image embed"},
	{ID: 1004, Channel: 100, Author: 12, Content: "Good morning everyone!", About: "text only"},
	{ID: 1005, Channel: 100, Author: 11, Content: "Photo dump from the trip",
		Images: []string{"trip-1.png", "trip-2.png", "trip-3.png", "trip-4.png"}, About: "four images"},
	{ID: 1006, Channel: 100, Author: 13, Content: "Color studies",
		Images: []string{"red.png", "green.png", "blue.png"}, About: "three images"},
	{ID: 2001, Channel: 200, Author: 11, Content: "Work in progress", Images: []string{"wip.png"}, About: "one image"},
	{ID: 3001, Channel: 300, Author: 12, Content: "Staff only: the new logo", Images: []string{"logo.png"}, About: "one image"},
}

// accountByID returns the demo account with that id.
func accountByID(id string) (demoAccount, bool) {
	for _, a := range accounts {
		if a.ID == id {
			return a, true
		}
	}
	return demoAccount{}, false
}

// channelByID returns the demo channel with that id.
func channelByID(id snowflake.ID) (demoChannel, bool) {
	for _, c := range channels {
		if c.ID == id {
			return c, true
		}
	}
	return demoChannel{}, false
}

// messageByID returns the demo message with that id.
func messageByID(id snowflake.ID) (demoMessage, bool) {
	for _, m := range messages {
		if m.ID == id {
			return m, true
		}
	}
	return demoMessage{}, false
}

// canView reports whether u may view channel c.
func (u demoUser) canView(c demoChannel) bool { return !c.ModsOnly || u.Mod }
