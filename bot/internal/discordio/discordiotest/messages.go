package discordiotest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
)

// cloneMessage copies a message through its JSON, so that no caller
// shares the Fake's slices and pointers.
func cloneMessage(m *discord.Message) (discord.Message, error) {
	var out discord.Message
	if err := roundTrip(m, &out); err != nil {
		return discord.Message{}, fmt.Errorf("discordiotest: copying message %d: %w", m.ID, err)
	}
	return out, nil
}

func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// sendable are the message flags a bot may set on a new message.
const sendable = discord.MessageFlagSuppressEmbeds | discord.MessageFlagEphemeral |
	discord.MessageFlagSuppressNotifications | discord.MessageFlagIsComponentsV2

// fromCreate is the message a MessageCreate makes, before its ID, channel
// and author are set; or Discord's refusal of it.
func fromCreate(c discord.MessageCreate) (discord.Message, error) {
	if c.Flags&^sendable != 0 {
		return discord.Message{}, invalidForm("flags")
	}
	m := discord.Message{
		Content:     c.Content,
		TTS:         c.TTS,
		Embeds:      slices.Clone(c.Embeds),
		Components:  slices.Clone(c.Components),
		Flags:       c.Flags,
		Attachments: filesAttached(c.Files),
	}
	return m, checkMessage(&m)
}

// applyUpdate edits m as Discord applies a MessageUpdate: fields present
// replace, attachments not kept are dropped, files are added; a loading
// (deferred) message stops loading.
func applyUpdate(m *discord.Message, u discord.MessageUpdate) error {
	edited, err := cloneMessage(m)
	if err != nil {
		return err
	}
	if u.Content != nil {
		edited.Content = *u.Content
	}
	if u.Embeds != nil {
		edited.Embeds = slices.Clone(*u.Embeds)
	}
	if u.Components != nil {
		edited.Components = slices.Clone(*u.Components)
	}
	if u.Flags != nil {
		edited.Flags = edited.Flags&^discord.MessageFlagSuppressEmbeds | *u.Flags&discord.MessageFlagSuppressEmbeds
	}
	if u.Attachments != nil {
		var kept []discord.Attachment
		for _, a := range edited.Attachments {
			if slices.ContainsFunc(*u.Attachments, func(k discord.AttachmentUpdate) bool {
				keep, ok := k.(discord.AttachmentKeep)
				return ok && keep.ID == a.ID
			}) {
				kept = append(kept, a)
			}
		}
		edited.Attachments = kept
	}
	edited.Attachments = append(edited.Attachments, filesAttached(u.Files)...)
	edited.Flags &^= discord.MessageFlagLoading
	if err := checkMessage(&edited); err != nil {
		return err
	}
	*m = edited
	return nil
}

// filesAttached are the attachments uploaded files become.
func filesAttached(files []*discord.File) []discord.Attachment {
	var out []discord.Attachment
	for _, f := range files {
		if f != nil {
			out = append(out, discord.Attachment{Filename: f.Name})
		}
	}
	return out
}

// checkMessage refuses what Discord refuses: a message with nothing in it
// (50006), content over 2000 characters or over 10 embeds (50035).
func checkMessage(m *discord.Message) error {
	if m.Content == "" && len(m.Embeds) == 0 && len(m.Components) == 0 && len(m.Attachments) == 0 &&
		!m.Flags.Has(discord.MessageFlagLoading) {
		return refusal(http.StatusBadRequest, codeEmptyMessage, "Cannot send an empty message")
	}
	if utf8.RuneCountInString(m.Content) > 2000 {
		return invalidForm("content: Must be 2000 or fewer in length.")
	}
	if len(m.Embeds) > 10 {
		return invalidForm("embeds: Must be 10 or fewer in length.")
	}
	return nil
}
