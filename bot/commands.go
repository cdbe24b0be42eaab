package bot

import (
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

	// The choices of /pin's when_full option.
	whenFullSkip  = "skip"
	whenFullQueue = "queue"
)

// Custom IDs of the /settings components. They start with "/" so that the
// handler.Mux routes them; the board menu's ID ends with the account.
const (
	idSwitch = "/settings/switch"
	idBoard  = "/settings/board"
	// idWhenFull is the menu of what /pin does at the limit by default.
	idWhenFull = "/settings/whenfull"
)

// commands returns the application commands the bot registers globally;
// r names the engine's window in their descriptions.
func commands(r pinRule) []discord.ApplicationCommandCreate {
	guildOnly := []discord.InteractionContextType{discord.InteractionContextTypeGuild}
	guildOrDM := []discord.InteractionContextType{discord.InteractionContextTypeGuild, discord.InteractionContextTypeBotDM}
	install := []discord.ApplicationIntegrationType{discord.ApplicationIntegrationTypeGuildInstall}
	maxMessages := 2000
	return []discord.ApplicationCommandCreate{
		discord.SlashCommandCreate{
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
			},
		},
		discord.MessageCommandCreate{
			Name:             cmdPinMessage,
			IntegrationTypes: install,
			Contexts:         guildOnly,
		},
		discord.SlashCommandCreate{
			Name:             cmdSettings,
			Description:      "Your Pinterest accounts: " + r.adj + " pin counts, the active account, default boards",
			IntegrationTypes: install,
			Contexts:         guildOrDM,
		},
		discord.SlashCommandCreate{
			Name:             cmdLink,
			Description:      "Connect a Pinterest account to Pinbot",
			IntegrationTypes: install,
			Contexts:         guildOrDM,
		},
		discord.SlashCommandCreate{
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
		},
		discord.SlashCommandCreate{
			Name:             cmdQueue,
			Description:      "Your queued pins: when each starts, what ran recently; cancel them",
			IntegrationTypes: install,
			Contexts:         guildOrDM,
		},
	}
}
