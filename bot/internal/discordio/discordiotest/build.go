package discordiotest

import (
	"encoding/json"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// Invocation is who acts in an interaction, and where.
type Invocation struct {
	// UserID is the acting user, a member of the channel's guild.
	UserID snowflake.ID
	// ChannelID is the guild text channel or thread the user acts in.
	// Zero, for a message command or a component, is its message's
	// channel.
	ChannelID snowflake.ID
	// Locale is the user's; "" is en-US.
	Locale discord.Locale
}

// Opt is a string option of a slash command as the user filled it in.
type Opt struct {
	Name  string
	Value string
	// Focused marks the option being typed, in an autocomplete
	// interaction; its Value is the partial input.
	Focused bool
	// Bool, when not nil, makes the option a boolean of that value
	// (Value is not used).
	Bool *bool
}

// SlashCommand is the interaction of a user running slash command name
// with string options.
func (f *Fake) SlashCommand(inv Invocation, name string, opts ...Opt) discord.ApplicationCommandInteraction {
	f.t.Helper()
	i := f.interact("SlashCommand", inv, discord.InteractionTypeApplicationCommand, 0, nil, func(*discord.Message) any {
		return f.commandDataLocked(name, opts)
	})
	return i.(discord.ApplicationCommandInteraction)
}

// Autocomplete is the interaction of a user typing into the option marked
// Focused of slash command name; exactly one option must be.
func (f *Fake) Autocomplete(inv Invocation, name string, opts ...Opt) discord.AutocompleteInteraction {
	f.t.Helper()
	focused := 0
	for _, o := range opts {
		if o.Focused {
			focused++
		}
	}
	if focused != 1 {
		f.t.Fatalf("discordiotest: Autocomplete: %d focused options, want 1", focused)
	}
	i := f.interact("Autocomplete", inv, discord.InteractionTypeAutocomplete, 0, nil, func(*discord.Message) any {
		return f.commandDataLocked(name, opts)
	})
	return i.(discord.AutocompleteInteraction)
}

// MessageCommand is the interaction of a user running message command
// name on a message of the world, which it carries resolved, content and
// attachments included.
func (f *Fake) MessageCommand(inv Invocation, name string, targetID snowflake.ID) discord.ApplicationCommandInteraction {
	f.t.Helper()
	if targetID == 0 {
		f.t.Fatalf("discordiotest: MessageCommand: no target message")
	}
	i := f.interact("MessageCommand", inv, discord.InteractionTypeApplicationCommand, targetID, nil, func(target *discord.Message) any {
		return map[string]any{
			"id":        f.commandIDLocked(name, discord.ApplicationCommandTypeMessage),
			"name":      name,
			"type":      discord.ApplicationCommandTypeMessage,
			"target_id": target.ID,
			"resolved":  map[string]any{"messages": map[snowflake.ID]*discord.Message{target.ID: target}},
		}
	})
	return i.(discord.ApplicationCommandInteraction)
}

// Button is the interaction of a user pressing a button on a message of
// the world; a zero messageID posts one from the bot, with that button,
// in the invocation's channel.
func (f *Fake) Button(inv Invocation, customID string, messageID snowflake.ID) discord.ComponentInteraction {
	f.t.Helper()
	row := discord.ActionRowComponent{Components: []discord.InteractiveComponent{
		discord.ButtonComponent{Style: discord.ButtonStylePrimary, Label: customID, CustomID: customID},
	}}
	i := f.interact("Button", inv, discord.InteractionTypeComponent, messageID, &row, func(*discord.Message) any {
		return map[string]any{"custom_id": customID, "component_type": discord.ComponentTypeButton}
	})
	return i.(discord.ComponentInteraction)
}

// StringSelect is the interaction of a user picking values from a string
// select menu on a message of the world; a zero messageID posts one from
// the bot, with a menu offering those values, in the invocation's
// channel.
func (f *Fake) StringSelect(inv Invocation, customID string, messageID snowflake.ID, values ...string) discord.ComponentInteraction {
	f.t.Helper()
	menu := discord.StringSelectMenuComponent{CustomID: customID, MaxValues: max(len(values), 1)}
	for _, v := range values {
		menu.Options = append(menu.Options, discord.StringSelectMenuOption{Label: v, Value: v})
	}
	if len(values) == 0 {
		menu.Options = []discord.StringSelectMenuOption{{Label: "none", Value: "none"}}
	}
	row := discord.ActionRowComponent{Components: []discord.InteractiveComponent{menu}}
	if values == nil {
		values = []string{}
	}
	i := f.interact("StringSelect", inv, discord.InteractionTypeComponent, messageID, &row, func(*discord.Message) any {
		return map[string]any{"custom_id": customID, "component_type": discord.ComponentTypeStringSelectMenu, "values": values}
	})
	return i.(discord.ComponentInteraction)
}

// wireOption is a command option as Discord sends it.
type wireOption struct {
	Name    string                               `json:"name"`
	Type    discord.ApplicationCommandOptionType `json:"type"`
	Value   any                                  `json:"value"`
	Focused bool                                 `json:"focused,omitempty"`
}

// commandDataLocked is a slash command's data. The caller holds f.mu.
func (f *Fake) commandDataLocked(name string, opts []Opt) any {
	data := map[string]any{
		"id":   f.commandIDLocked(name, discord.ApplicationCommandTypeSlash),
		"name": name,
		"type": discord.ApplicationCommandTypeSlash,
	}
	if len(opts) > 0 {
		w := make([]wireOption, len(opts))
		for i, o := range opts {
			w[i] = wireOption{Name: o.Name, Type: discord.ApplicationCommandOptionTypeString, Value: o.Value, Focused: o.Focused}
			if o.Bool != nil {
				w[i].Type, w[i].Value = discord.ApplicationCommandOptionTypeBool, *o.Bool
			}
		}
		data["options"] = w
	}
	return data
}

// commandIDLocked is the ID SetCommands gave a command, else a fresh one.
func (f *Fake) commandIDLocked(name string, typ discord.ApplicationCommandType) snowflake.ID {
	if id, ok := f.cmdIDs[commandKey{name, typ}]; ok {
		return id
	}
	return f.newIDLocked()
}

// wireInteraction is INTERACTION_CREATE's payload for a guild.
type wireInteraction struct {
	ID                           snowflake.ID                   `json:"id"`
	ApplicationID                snowflake.ID                   `json:"application_id"`
	Type                         discord.InteractionType        `json:"type"`
	Data                         any                            `json:"data"`
	Guild                        map[string]any                 `json:"guild"`
	GuildID                      snowflake.ID                   `json:"guild_id"`
	Channel                      wireChannel                    `json:"channel"`
	ChannelID                    snowflake.ID                   `json:"channel_id"`
	Member                       wireMember                     `json:"member"`
	Token                        string                         `json:"token"`
	Version                      int                            `json:"version"`
	Message                      *discord.Message               `json:"message,omitempty"`
	AppPermissions               discord.Permissions            `json:"app_permissions"`
	Locale                       discord.Locale                 `json:"locale"`
	GuildLocale                  discord.Locale                 `json:"guild_locale"`
	Entitlements                 []any                          `json:"entitlements"`
	AuthorizingIntegrationOwners map[string]snowflake.ID        `json:"authorizing_integration_owners"`
	Context                      discord.InteractionContextType `json:"context"`
}

// interact makes an interaction of typ by inv on message msgID (0: none,
// or for a component, a new bot message with the component row), with
// the data data returns, registers its token and decodes it as disgo
// does. It fails the test on a reference the world lacks.
func (f *Fake) interact(op string, inv Invocation, typ discord.InteractionType, msgID snowflake.ID,
	row *discord.ActionRowComponent, data func(target *discord.Message) any) discord.Interaction {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()

	var target *discord.Message
	if msgID != 0 {
		target = f.messages[msgID]
		if target == nil {
			f.fatalf("%s: unknown message %d", op, msgID)
		}
		if inv.ChannelID == 0 {
			inv.ChannelID = target.ChannelID
		}
		if target.ChannelID != inv.ChannelID {
			f.fatalf("%s: message %d is not in channel %d", op, msgID, inv.ChannelID)
		}
	}
	ch := f.channelLocked(op, inv.ChannelID)
	if ch.guildID == 0 {
		f.fatalf("%s: channel %d is not a guild's", op, ch.id)
	}
	g := f.guilds[ch.guildID]
	m := g.members[inv.UserID]
	if m == nil {
		f.fatalf("%s: user %d is not a member of guild %d", op, inv.UserID, g.id)
	}
	if target == nil && row != nil {
		target = &discord.Message{Components: []discord.LayoutComponent{*row}}
		f.storeResponseLocked(ch, target)
	}
	if inv.Locale == "" {
		inv.Locale = discord.LocaleEnglishUS
	}

	now := f.nowLocked()
	in := &interaction{id: f.newIDLocked(), typ: typ, channelID: ch.id, createdAt: now}
	in.token = "interaction-token-" + in.id.String()
	perms := f.permissionsLocked(g, ch, inv.UserID)
	app := f.permissionsLocked(g, ch, f.botID)
	if ch.hidden {
		app = discord.PermissionsNone
	}
	w := wireInteraction{
		ID:                           in.id,
		ApplicationID:                f.appID,
		Type:                         typ,
		Data:                         data(target),
		Guild:                        map[string]any{"id": g.id, "locale": discord.LocaleEnglishUS, "features": []string{}},
		GuildID:                      g.id,
		Channel:                      f.wireChannelLocked(ch, &perms),
		ChannelID:                    ch.id,
		Member:                       f.wireMemberLocked(m, &perms),
		Token:                        in.token,
		Version:                      1,
		AppPermissions:               app,
		Locale:                       inv.Locale,
		GuildLocale:                  discord.LocaleEnglishUS,
		Entitlements:                 []any{},
		AuthorizingIntegrationOwners: map[string]snowflake.ID{"0": g.id},
		Context:                      discord.InteractionContextTypeGuild,
	}
	if typ == discord.InteractionTypeComponent {
		w.Message = target
		in.componentMsg = target.ID
	}
	b, err := json.Marshal(w)
	if err != nil {
		f.fatalf("%s: encoding the interaction: %v", op, err)
	}
	i, err := discord.UnmarshalInteraction(b)
	if err != nil {
		f.fatalf("%s: disgo cannot decode the interaction: %v\n%s", op, err, b)
	}
	f.inters[in.token] = in
	return i
}
