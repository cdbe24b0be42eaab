package bot

import (
	"strings"

	"github.com/disgoorg/disgo/discord"
)

// Command names, as registered with Discord.
const (
	cmdPin        = "pin"
	cmdPinMessage = "Pin to Pinterest"
	cmdSettings   = "settings"
	cmdLink       = "link"
	cmdUnlink     = "unlink"
	cmdQueue      = "queue"

	optMessages = "messages"
	optBoard    = "board"
	optAccount  = "account"
	optWhenFull = "when_full"
	optAgain    = "again"

	// The choices of /pin's when_full option.
	whenFullSkip  = "skip"
	whenFullQueue = "queue"
)

// Custom IDs of the /settings components; the board menu's ID ends with
// the account.
const (
	idSwitch = "/settings/switch"
	idBoard  = "/settings/board"
	// idWhenFull is the menu of what /pin does at the limit by default.
	idWhenFull = "/settings/whenfull"
)

// command is one entry of the command table: an application command the
// bot registers, or a component of its replies, with everything that
// names it. The router (routes), Discord's registration (commands), the
// metrics' labels (interactionName, InteractionLabels) and the sandbox
// console (ConsoleCommands) all read the table, so a new command is one
// entry here and the file of its handler.
type command struct {
	// name is an application command's name as registered with Discord;
	// "" for a component.
	name string
	// id is a component's custom ID; with param, the ID ends with "/"
	// and an account ID (routed as "/{account}").
	id    string
	param bool
	// label names the interaction in pinbot_interactions_total; its
	// autocomplete, when it has one, is label + "_autocomplete".
	label string
	// console is the sandbox console's command for it; "" when the
	// console does not offer it.
	console string
	// create is the command's definition for Discord; r names the
	// engine's window in descriptions.
	create func(r pinRule) discord.ApplicationCommandCreate
	// Exactly one handler is set: slash for a slash command, message for
	// a message command, component for a component.
	slash     func(*Bot, discord.SlashCommandInteractionData, *event) error
	message   func(*Bot, discord.MessageCommandInteractionData, *event) error
	component func(*Bot, *event) error
	// autocomplete, when set, answers a slash command's autocomplete.
	autocomplete func(*Bot, discord.AutocompleteInteractionData, *event) error
}

// autocompleteSuffix ends the metrics label of a command's autocomplete.
const autocompleteSuffix = "_autocomplete"

// commandTable is the command table: every interaction the bot answers.
// Application commands are registered with Discord in its order.
func commandTable() []command {
	guildOnly := []discord.InteractionContextType{discord.InteractionContextTypeGuild}
	guildOrDM := []discord.InteractionContextType{discord.InteractionContextTypeGuild, discord.InteractionContextTypeBotDM}
	install := []discord.ApplicationIntegrationType{discord.ApplicationIntegrationTypeGuildInstall}
	return []command{
		{
			name: cmdPin, label: "pin", console: "pin",
			create: func(pinRule) discord.ApplicationCommandCreate {
				maxMessages := 2000
				return discord.SlashCommandCreate{
					Name:             cmdPin,
					Description:      "Pin the images of up to 10 messages to your active Pinterest account",
					IntegrationTypes: install,
					Contexts:         guildOnly,
					Options: []discord.ApplicationCommandOption{
						discord.ApplicationCommandOptionString{
							Name:        optMessages,
							Description: "1 to 10 message IDs or message links, separated by spaces or commas",
							Required:    true,
							MaxLength:   &maxMessages,
						},
						discord.ApplicationCommandOptionString{
							Name:         optBoard,
							Description:  "Board to pin to (default: the board chosen in /settings)",
							Autocomplete: true,
						},
						discord.ApplicationCommandOptionString{
							Name:        optWhenFull,
							Description: "At the 12-hour limit: skip the rest (default), or queue it to pin when slots free",
							Choices: []discord.ApplicationCommandOptionChoiceString{
								{Name: "skip the rest", Value: whenFullSkip},
								{Name: "queue the rest", Value: whenFullQueue},
							},
						},
						discord.ApplicationCommandOptionBool{
							Name:        optAgain,
							Description: "Pin pictures already pinned to this board again (default: no)",
						},
					},
				}
			},
			slash: (*Bot).handlePin, autocomplete: (*Bot).autocompletePin,
		},
		{
			name: cmdPinMessage, label: "pin_message", console: "pinmsg",
			create: func(pinRule) discord.ApplicationCommandCreate {
				return discord.MessageCommandCreate{Name: cmdPinMessage, IntegrationTypes: install, Contexts: guildOnly}
			},
			message: (*Bot).handlePinMessage,
		},
		{
			name: cmdSettings, label: "settings", console: "settings",
			create: func(r pinRule) discord.ApplicationCommandCreate {
				return discord.SlashCommandCreate{
					Name:             cmdSettings,
					Description:      "Your Pinterest accounts: " + r.adj + " pin counts, the active account, default boards",
					IntegrationTypes: install,
					Contexts:         guildOrDM,
				}
			},
			slash: (*Bot).handleSettings,
		},
		{id: idSwitch, label: "settings_switch", console: "switch", component: (*Bot).handleSwitch},
		{id: idBoard, param: true, label: "settings_board", console: "board", component: (*Bot).handleDefaultBoard},
		{id: idWhenFull, label: "settings_when_full", console: "whenfull", component: (*Bot).handleWhenFull},
		{
			name: cmdLink, label: "link", console: "link",
			create: func(pinRule) discord.ApplicationCommandCreate {
				return discord.SlashCommandCreate{
					Name:             cmdLink,
					Description:      "Connect a Pinterest account to Pinbot",
					IntegrationTypes: install,
					Contexts:         guildOrDM,
				}
			},
			slash: (*Bot).handleLink,
		},
		{
			name: cmdUnlink, label: "unlink", console: "unlink",
			create: func(pinRule) discord.ApplicationCommandCreate {
				return discord.SlashCommandCreate{
					Name:             cmdUnlink,
					Description:      "Disconnect one of your Pinterest accounts from Pinbot",
					IntegrationTypes: install,
					Contexts:         guildOrDM,
					Options: []discord.ApplicationCommandOption{
						discord.ApplicationCommandOptionString{
							Name:         optAccount,
							Description:  "The account to disconnect",
							Required:     true,
							Autocomplete: true,
						},
					},
				}
			},
			slash: (*Bot).handleUnlink, autocomplete: (*Bot).autocompleteUnlink,
		},
		{
			name: cmdQueue, label: "queue", console: "queue",
			create: func(pinRule) discord.ApplicationCommandCreate {
				return discord.SlashCommandCreate{
					Name:             cmdQueue,
					Description:      "Your queued pins: when each starts, what ran recently; cancel them",
					IntegrationTypes: install,
					Contexts:         guildOrDM,
				}
			},
			slash: (*Bot).handleQueue,
		},
		{id: idQueueAll, param: true, label: "queue_all", console: "cancel all", component: (*Bot).handleQueueAll},
		{id: idQueueMessage, label: "queue_message", console: "cancel", component: (*Bot).handleQueueMessage},
		{
			name: cmdServer, label: "server", console: "server",
			create: func(pinRule) discord.ApplicationCommandCreate { return serverCommand() },
			slash:  (*Bot).handleServer,
		},
		{
			name: cmdAutopin, label: "autopin", console: "autopin",
			create: func(pinRule) discord.ApplicationCommandCreate { return autopinCommand() },
			slash:  (*Bot).handleAutopin, autocomplete: (*Bot).autocompletePin,
		},
	}
}

// commands returns the application commands the bot registers globally,
// in the table's order; r names the engine's window in their
// descriptions.
func commands(r pinRule) []discord.ApplicationCommandCreate {
	var cs []discord.ApplicationCommandCreate
	for _, c := range commandTable() {
		if c.create != nil {
			cs = append(cs, c.create(r))
		}
	}
	return cs
}

// route finds the table's entry for an interaction: its application
// command (by name and kind), its autocomplete, or its component (by
// custom ID; account is what follows the ID of a component with param).
func route(i discord.Interaction) (c command, account string, ok bool) {
	for _, c := range commandTable() {
		switch in := i.(type) {
		case discord.ApplicationCommandInteraction:
			if c.name == "" || c.name != in.Data.CommandName() {
				continue
			}
			switch in.Data.(type) {
			case discord.SlashCommandInteractionData:
				ok = c.slash != nil
			case discord.MessageCommandInteractionData:
				ok = c.message != nil
			}
			return c, "", ok
		case discord.AutocompleteInteraction:
			if c.name != "" && c.name == in.Data.CommandName {
				return c, "", c.autocomplete != nil
			}
		case discord.ComponentInteraction:
			id := in.Data.CustomID()
			if c.id == "" || c.component == nil {
				continue
			}
			if !c.param && id == c.id {
				return c, "", true
			}
			if rest, found := strings.CutPrefix(id, c.id+"/"); c.param && found && rest != "" && !strings.Contains(rest, "/") {
				return c, rest, true
			}
		}
	}
	return command{}, "", false
}

// labelOf returns the metrics label of an application command (by its
// name), of its autocomplete, or of a component (by its custom ID), and
// whether the table has it.
func labelOf(commandName string, autocomplete bool, customID string) (string, bool) {
	for _, c := range commandTable() {
		switch {
		case c.name != "" && c.name == commandName && autocomplete:
			if c.autocomplete != nil {
				return c.label + autocompleteSuffix, true
			}
		case c.name != "" && c.name == commandName:
			return c.label, true
		case c.id != "" && customID != "" && (customID == c.id || c.param && strings.HasPrefix(customID, c.id+"/")):
			return c.label, true
		}
	}
	return "", false
}

// InteractionLabels lists the values the bot gives an interaction's
// command label in Observer.InteractionDone, from the command table: each
// command, component and autocomplete ("other" for anything else is not
// listed). The metrics count any other value as "other".
func InteractionLabels() []string {
	var ls []string
	for _, c := range commandTable() {
		ls = append(ls, c.label)
		if c.autocomplete != nil {
			ls = append(ls, c.label+autocompleteSuffix)
		}
	}
	return ls
}

// A ConsoleCommand is a command or component of the bot's that the
// sandbox console offers, from the command table.
type ConsoleCommand struct {
	// Verb is the console's command for it, such as "pin", "pinmsg" or
	// "cancel all".
	Verb string
	// Name is the application command's name as registered with Discord;
	// "" for a component.
	Name string
	// CustomID is a component's custom ID; with Param it is followed by
	// "/" and an account ID.
	CustomID string
	Param    bool
}

// ConsoleCommands lists what the sandbox console offers, in the table's
// order.
func ConsoleCommands() []ConsoleCommand {
	var cs []ConsoleCommand
	for _, c := range commandTable() {
		if c.console != "" {
			cs = append(cs, ConsoleCommand{Verb: c.console, Name: c.name, CustomID: c.id, Param: c.param})
		}
	}
	return cs
}
