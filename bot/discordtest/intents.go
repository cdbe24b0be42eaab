package discordtest

// Intents are the gateway intents a session identifies with, as Discord
// defines the bits.
type Intents int64

// The intents the stand-in acts on.
const (
	IntentGuilds                Intents = 1 << 0
	IntentGuildMembers          Intents = 1 << 1
	IntentGuildPresences        Intents = 1 << 8
	IntentGuildMessages         Intents = 1 << 9
	IntentGuildMessageReactions Intents = 1 << 10
	IntentMessageContent        Intents = 1 << 15
	// IntentsAll is every bit Discord defines: 0 to 16, 20, 21, 24
	// and 25.
	IntentsAll Intents = 1<<17 - 1 | 1<<20 | 1<<21 | 1<<24 | 1<<25
)

// Has reports whether every bit of b is set.
func (i Intents) Has(b Intents) bool { return i&b == b }
