package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/pinbot/pinbot/bot"
)

// inviteCommand prints the address at which a server manager adds the
// bot to a server, with the least permissions it needs. The application
// ID comes from the bot token, which is all it reads: it opens nothing
// and connects to nothing.
func inviteCommand(st settings, args []string, stdout io.Writer) error {
	flags := newFlagSet("invite")
	st.bind(flags, "invite")
	if err := parseFlags(flags, "invite", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: "invite", err: fmt.Errorf("invite: unexpected argument %q", flags.Arg(0))}
	}
	tok := &st.discordToken
	switch {
	case tok.value == "":
		return &usageError{cmd: "invite", err: fmt.Errorf("invite: set %s to the bot token: the invite is for its application", tok.both())}
	case strings.TrimSpace(tok.value) != tok.value || strings.ContainsAny(tok.value, " \t\r\n"):
		return &usageError{cmd: "invite", err: fmt.Errorf("invalid %s: it contains spaces or line breaks", tok.name())}
	}
	id, err := bot.ApplicationID(tok.value)
	if err != nil {
		return &usageError{cmd: "invite", err: fmt.Errorf(
			"invalid %s: it is not a Discord bot token (its first part must be the base64 application ID)", tok.name())}
	}
	fmt.Fprintln(stdout, bot.InviteURL(id))
	return nil
}
