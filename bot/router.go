package bot

import (
	"context"

	"github.com/disgoorg/disgo/discord"
)

// event is an interaction as its handler receives it.
type event struct {
	// Ctx is the handler's context: it carries the interaction's log IDs
	// and ends with the handler's time (see admit).
	Ctx context.Context
	discord.Interaction
	// account is what follows the custom ID of a component whose ID ends
	// with an account (command.param).
	account string
	// entered says the gateway admitted the interaction already
	// (enterFromGateway): admit does not enter again.
	entered bool
}

// componentData is a component interaction's data; nil for any other.
func (e *event) componentData() discord.ComponentInteractionData {
	if ci, ok := e.Interaction.(discord.ComponentInteraction); ok {
		return ci.Data
	}
	return nil
}

// HandleInteraction works on one interaction from the gateway, on the
// caller's goroutine, until it is answered: the gateway calls it on a
// goroutine of its own for each (see discordio.Gateway).
func (b *Bot) HandleInteraction(i discord.Interaction) {
	b.handle(&event{Ctx: b.workCtx, Interaction: i})
}

// enterFromGateway is a cluster member's gateway's Admit
// (discordio.GatewayConfig): it registers the interaction's handler
// before the gateway counts its event as handled, and refuses it once
// the bot closes, so that the event goes to the shard's next holder
// instead of being dropped here. handleEntered runs what it admitted.
func (b *Bot) enterFromGateway(discord.Interaction) bool { return b.enter() }

func (b *Bot) handleEntered(i discord.Interaction) {
	b.handle(&event{Ctx: b.workCtx, Interaction: i, entered: true})
}

func (b *Bot) handle(e *event) {
	if err := b.admit(e, b.dispatch); err != nil {
		b.log.Error().Str("error", errText(err)).Str("interaction_id", e.ID().String()).Msg("handler failed")
	}
}

// dispatch runs the command table's handler of an admitted interaction.
func (b *Bot) dispatch(e *event) error {
	c, account, ok := route(e.Interaction)
	if !ok {
		return b.notFound(e)
	}
	e.account = account
	switch in := e.Interaction.(type) {
	case discord.ApplicationCommandInteraction:
		switch d := in.Data.(type) {
		case discord.SlashCommandInteractionData:
			return c.slash(b, d, e)
		case discord.MessageCommandInteractionData:
			return c.message(b, d, e)
		}
	case discord.AutocompleteInteraction:
		return c.autocomplete(b, in.Data, e)
	case discord.ComponentInteraction:
		return c.component(b, e)
	}
	return b.notFound(e)
}

// notFound answers an interaction no entry of the table serves (a command
// removed from this version, a stale component).
func (b *Bot) notFound(e *event) error {
	if e.Type() == discord.InteractionTypeAutocomplete {
		return b.autocompleteResult(e, []discord.AutocompleteChoice{})
	}
	b.reply(e.Ctx, e.Token(), reply{content: msgUnknownCommand})
	return nil
}

// autocompleteResult sends an autocomplete interaction's choices, by the
// instant admit set for answering (see answerContext).
func (b *Bot) autocompleteResult(e *event, choices []discord.AutocompleteChoice) error {
	actx, cancel := b.answerContext(e.Ctx)
	defer cancel()
	return b.api.Respond(actx, e.ID(), e.Token(), discord.InteractionResponse{
		Type: discord.InteractionResponseTypeAutocompleteResult,
		Data: discord.AutocompleteResult{Choices: choices},
	})
}
