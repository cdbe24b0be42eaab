package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
)

// PartWait is how long the console waits for the next part of a reply
// longer than Discord's 2000 characters, after a part without components
// (see the package documentation).
const PartWait = 3 * time.Second

// replyTimeout bounds the wait for the bot's reply to one command.
const replyTimeout = 2 * time.Minute

// MaxLineLen is the longest line ReadLines passes on, in bytes, not
// counting its line ending.
const MaxLineLen = 64 << 10

// ErrLineTooLong is the Err of a Line longer than MaxLineLen, which
// ReadLines discarded.
var ErrLineTooLong = fmt.Errorf("the line is longer than %d KiB and was ignored", MaxLineLen>>10)

// Names of the bot's commands, as the bot registers them with Discord,
// read from its command table by the console's command for each.
var (
	cmdPin        = botCommand("pin").Name
	cmdPinMessage = botCommand("pinmsg").Name
	cmdSettings   = botCommand("settings").Name
	cmdLink       = botCommand("link").Name
	cmdUnlink     = botCommand("unlink").Name
	cmdQueue      = botCommand("queue").Name
)

// consoleOnly are the console's commands that drive no command of the
// bot's: the rest of Commands is the bot's table (bot.ConsoleCommands).
var consoleOnly = []string{"dms", "post", "edit", "delete", "react", "unreact", "as", "channel", "messages", "pinterest", "help", "quit"}

// botCommand is the command or component of the bot's command table that
// the console offers as verb.
func botCommand(verb string) bot.ConsoleCommand {
	for _, c := range bot.ConsoleCommands() {
		if c.Verb == verb {
			return c
		}
	}
	panic("sandbox: the bot's command table offers the console no " + verb)
}

// Commands lists the console's commands, for help.
const Commands = `  /pin 1001 1002 [board:BOARD]    /pin: up to 10 message IDs (of the current channel) or links;
                                  one command pins at most 10 images and skips the rest
  /pin messages:LINK ...          the same, naming the option
  /pin 1001 when_full:queue       at the limit, queue the rest (they pin when slots free)
  /pin 1001 again:true            pin pictures pinned to the board before again
  /queue                          your queued pins, their start times, recent results
  /cancel N                       cancel the waiting pins of message N of /queue (its menu)
  /cancel all [ACCOUNT]           cancel an account's waiting pins (/queue's button; ACCOUNT
                                  when several accounts have some)
  /dms                            the direct messages Pinbot sent you (results of queued pins,
                                  answers to reactions)
  /post [N] [TEXT]                post a message with N images (1 to 10, default 1) here as you
  /edit MESSAGE [+N]              add N images (1 to 10, default 1) to a message you posted (an
                                  ID here, or a link); in an auto-pin channel Pinbot queues the
                                  new pictures only
  /delete MESSAGE                 delete a message you posted; Pinbot cancels its waiting pins
                                  (queued by auto-pin or a pin reaction) and says so by DM
  /react MESSAGE [EMOJI]          react to a message (an ID here, or a link); the server's pin
                                  emoji (📌 unless /server chose another), the default, pins
                                  its images: Pinbot answers by DM
  /unreact MESSAGE [EMOJI]        take the reaction off; off the pin emoji, it cancels the pins
                                  of that message still waiting in your queue
  /autopin add CHANNEL BOARD      make a channel pin itself (Manage Channels there: bob has it):
                                  pictures posted in it are queued for your active account
  /autopin list                   the server's auto-pin channels
  /autopin pause|resume|remove CHANNEL
                                  pause, resume or remove a channel's auto-pin (CHANNEL: art, #art)
  /server [pin_emoji:EMOJI|reset] the server's settings; pin_emoji: sets its pin reaction's emoji
                                  (Manage Server: bob has it), reset goes back to 📌
  /pinmsg ID                      the "Pin to Pinterest" message command on one message
  /settings                       your accounts, their pin counts, the active one
  /switch ACCOUNT                 make ACCOUNT active (picks it in the /settings menu)
  /board BOARD                    choose the active account's default board (/settings menu)
  /whenfull queue|skip            what /pin does at the limit when it does not say (/settings menu)
  /link [ACCOUNT]                 run /link, approve it on the Pinterest stand-in as ACCOUNT, sign in with Discord, confirm
  /unlink ACCOUNT                 run /unlink
  /as USER                        act as another demo user: alice, bob or carol
  /channel NAME                   act in another channel: general, art or staff
  /messages                       list the demo messages, those posted, their links and reactions
  /pinterest                      the pins the Pinterest stand-in made in this run
  help                            list these commands
  quit                            stop; so do end of input, Ctrl-C and SIGTERM
`

// Console plays the demo users in the sandbox: it turns command lines
// into Discord interactions on the Discord stand-in and prints the bot's
// replies as the user reads them. A Console is used from one goroutine.
type Console struct {
	sb      *Sandbox
	out     io.Writer
	err     error // the first write error; nothing is written after it
	user    demoUser
	channel demoChannel
	// now is the reader's clock, in the reader's zone, against which
	// timestamps are written out; nil means time.Now.
	now func() time.Time
	// queue is the last /queue reply shown (its cancel controls), for the
	// user and channel it was shown to: /cancel picks in what the user
	// saw, as a click in Discord would, even when pins ran since.
	queue      *answer
	queueUser  snowflake.ID
	queueInChn snowflake.ID
}

// clock returns the reader's time.
func (c *Console) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Console returns a console writing to out, acting as the first demo user
// (alice) in the first channel (#general).
func (s *Sandbox) Console(out io.Writer) *Console {
	return &Console{sb: s, out: out, user: users[0], channel: channels[0]}
}

// Err returns the first error met writing to the console's output.
func (c *Console) Err() error { return c.err }

func (c *Console) printf(format string, args ...any) {
	if c.err == nil {
		_, c.err = fmt.Fprintf(c.out, format, args...)
	}
}

// println writes text and a newline, unless text is empty.
func (c *Console) println(text string) {
	if text != "" {
		c.printf("%s\n", text)
	}
}

func (c *Console) errorf(format string, args ...any) {
	c.printf("error: "+format+"\n", args...)
}

// Banner prints what the sandbox holds: the demo server, the users and
// what they linked, and who the console acts as.
func (c *Console) Banner(ctx context.Context) {
	c.printf("pinbot sandbox: the bot runs against stand-ins of Discord and Pinterest on loopback.\n")
	c.printf("OAuth callback: %s\n", c.sb.CallbackURL())
	c.printf("Operator: %s/metrics, %s/readyz", c.sb.WebURL(), c.sb.WebURL())
	if f := c.sb.AdminTokenFile(); f != "" {
		c.printf(", dashboard %s/admin/login (token in %s)", c.sb.WebURL(), f)
	}
	c.printf("\n")
	c.printf("Server %q (%d):\n", "Pinbot sandbox", GuildID)
	for _, ch := range channels {
		var ms []string
		for _, m := range messages {
			if m.Channel == ch.ID {
				ms = append(ms, fmt.Sprintf("%d %s", m.ID, m.About))
			}
		}
		note := ""
		if ch.ModsOnly {
			note = " (mods only)"
		}
		c.printf("  #%s (%d)%s: %s\n", ch.Name, ch.ID, note, strings.Join(ms, ", "))
	}
	c.printf("Users:\n")
	for _, u := range users {
		c.printf("  %s\n", c.describeUser(ctx, u))
	}
	c.println(c.describeAutopin(ctx))
	c.printf("You are %s in #%s. Type \"help\" for the commands.\n", c.user.Name, c.channel.Name)
}

// describeUser says who u is and what they linked, from the token store.
func (c *Console) describeUser(ctx context.Context, u demoUser) string {
	s := u.Name
	if u.Mod {
		s += " (mods: Manage Channels, Manage Server)"
	}
	lu, err := c.sb.links.User(ctx, u.ID.String())
	if err != nil {
		return s + ": links unavailable: " + err.Error()
	}
	if len(lu.Accounts) == 0 {
		return s + ": nothing linked"
	}
	names := make([]string, len(lu.Accounts))
	for i, id := range lu.Accounts {
		names[i] = c.accountLabel(id)
		if id == lu.Active {
			names[i] += " (active)"
		}
	}
	return s + ": linked " + strings.Join(names, ", ")
}

// accountLabel is "@username (id)" for a demo account, else the id.
func (c *Console) accountLabel(id string) string {
	if a, ok := accountByID(id); ok {
		return "@" + a.Username + " (" + id + ")"
	}
	return id
}

// Serve reads command lines from in and executes them until quit, the end
// of in or the end of ctx, printing a prompt before each when prompt is
// set. A line longer than MaxLineLen is answered with an error line and
// skipped. The end of ctx is a normal stop. It fails when in cannot be
// read or the output cannot be written.
func (c *Console) Serve(ctx context.Context, in io.Reader, prompt bool) error {
	done := make(chan struct{})
	defer close(done)
	lines, readErr := ReadLines(in, done)
	for {
		if prompt {
			c.printf("%s #%s> ", c.user.Name, c.channel.Name)
		}
		if c.err != nil {
			return fmt.Errorf("sandbox: writing to the console: %w", c.err)
		}
		select {
		case <-ctx.Done():
			if prompt {
				c.printf("\n")
			}
			return nil
		case line, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("sandbox: reading commands: %w", err)
				}
				if prompt {
					c.printf("\n")
				}
				return c.err
			}
			if line.Err != nil {
				c.errorf("%v", line.Err)
				continue
			}
			if c.Exec(ctx, line.Text) {
				return c.err
			}
		}
	}
}

// A Line is one line read by ReadLines.
type Line struct {
	// Text is the line without its ending ("\n" or "\r\n"); it is ""
	// when Err is set.
	Text string
	// Err is ErrLineTooLong when the line was longer than MaxLineLen: the
	// whole line was discarded, and reading goes on with the next one.
	Err error
}

// ReadLines sends each line of r on lines until r ends or done is closed.
// A line longer than MaxLineLen is not kept: its Line carries
// ErrLineTooLong instead, so that a reader can answer it and go on. When r
// ends, the read error (nil at end of input) is sent on the returned error
// channel before lines is closed. A reader blocked in r stays blocked
// after done is closed: it ends with r. The engine demo of cmd/pinbot
// reads its console with it too.
func ReadLines(r io.Reader, done <-chan struct{}) (<-chan Line, <-chan error) {
	lines := make(chan Line)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, ok, err := readLine(br)
			if ok {
				select {
				case lines <- line:
				case <-done:
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				errc <- err
				return
			}
		}
	}()
	return lines, errc
}

// readLine reads the next line of br, keeping at most MaxLineLen bytes of
// it (plus its ending) in memory. ok reports whether there was a line: the
// last one may lack its "\n", and it is returned along with the error that
// ended the input (io.EOF at its end).
func readLine(br *bufio.Reader) (line Line, ok bool, err error) {
	var text []byte
	tooLong := false
	for {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		ok = ok || len(chunk) > 0
		if !tooLong {
			text = append(text, chunk...)
			// Past MaxLineLen bytes and an ending, the line is too long
			// whatever follows: stop keeping it.
			if len(text) > MaxLineLen+len("\r\n") {
				text, tooLong = nil, true
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if !ok {
		return Line{}, false, err
	}
	text = bytes.TrimSuffix(text, []byte("\n"))
	text = bytes.TrimSuffix(text, []byte("\r"))
	if tooLong || len(text) > MaxLineLen {
		return Line{Err: ErrLineTooLong}, true, err
	}
	return Line{Text: string(text)}, true, err
}

// Exec executes one command line, printing what it shows, and reports
// whether it was quit. Blank lines are ignored; the leading slash of a
// command is optional.
func (c *Console) Exec(ctx context.Context, line string) (quit bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	name, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(strings.TrimPrefix(name, "/")) {
	case "pin":
		c.pin(ctx, rest)
	case "pinmsg", "pin-message":
		c.pinMessage(ctx, rest)
	case "settings":
		c.run(ctx, discordtest.ChatInput{Name: cmdSettings}, c.channel.ID)
	case "queue":
		c.run(ctx, discordtest.ChatInput{Name: cmdQueue}, c.channel.ID)
	case "cancel":
		c.cancel(ctx, rest)
	case "whenfull", "when_full":
		c.whenFull(ctx, rest)
	case "dms":
		c.listDMs()
	case "post":
		c.post(ctx, rest)
	case "edit":
		c.editMessage(ctx, rest)
	case "delete":
		c.deleteMessage(rest)
	case "react":
		c.react(ctx, rest, true)
	case "unreact":
		c.react(ctx, rest, false)
	case "autopin":
		c.autopin(ctx, rest)
	case "server":
		c.server(ctx, rest)
	case "switch":
		c.pick(ctx, rest, true)
	case "board":
		c.pick(ctx, rest, false)
	case "link":
		c.link(ctx, rest)
	case "unlink":
		c.unlink(ctx, rest)
	case "as":
		c.as(rest)
	case "channel":
		c.setChannel(rest)
	case "messages":
		c.listMessages()
	case "pinterest":
		c.listPins()
	case "help":
		c.printf("Commands:\n%s", Commands)
	case "quit", "exit":
		return true
	default:
		c.errorf("unknown command %.40q; type \"help\" for the commands", name)
	}
	return false
}

// splitPinArgs reads /pin's arguments: the messages option (with or
// without "messages:") and an optional trailing "board:NAME".
func splitPinArgs(s string) (msgs, board string) {
	s = strings.TrimSpace(s)
	for i := strings.Index(s, "board:"); i >= 0; {
		if i == 0 || s[i-1] == ' ' {
			board = strings.TrimSpace(s[i+len("board:"):])
			s = strings.TrimSpace(s[:i])
			break
		}
		j := strings.Index(s[i+1:], "board:")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return strings.TrimSpace(strings.TrimPrefix(s, "messages:")), board
}

func (c *Console) pin(ctx context.Context, args string) {
	var whenFull, again string
	var kept []string
	for _, f := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(f, "when_full:"); ok {
			whenFull = v
			continue
		}
		if v, ok := strings.CutPrefix(f, "again:"); ok {
			again = v
			continue
		}
		kept = append(kept, f)
	}
	msgs, board := splitPinArgs(strings.Join(kept, " "))
	if msgs == "" {
		c.errorf("usage: /pin MESSAGE... [board:BOARD] [when_full:skip|queue] [again:true], with message IDs or links")
		return
	}
	opts := []discordtest.CommandOption{{Name: "messages", Value: msgs}}
	if whenFull != "" {
		opts = append(opts, discordtest.CommandOption{Name: "when_full", Value: whenFull})
	}
	if board != "" {
		opts = append(opts, discordtest.CommandOption{Name: "board", Value: board})
	}
	if again != "" {
		b, err := strconv.ParseBool(again)
		if err != nil {
			c.errorf("again: takes true or false, not %q", again)
			return
		}
		opts = append(opts, discordtest.CommandOption{Name: "again", Value: b})
	}
	c.run(ctx, discordtest.ChatInput{Name: cmdPin, Options: opts}, c.channel.ID)
}

// pinMessage runs the message command on a message the user can see, in
// its channel, as the Discord client offers it.
func (c *Console) pinMessage(ctx context.Context, arg string) {
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || n == 0 {
		c.errorf("usage: /pinmsg MESSAGE_ID")
		return
	}
	id := snowflake.ID(n)
	m, ok := c.sb.discord.Message(id)
	if !ok {
		c.errorf("there is no message %d; /messages lists them", id)
		return
	}
	if ch, ok := channelByID(m.ChannelID); ok && !c.user.canView(ch) {
		c.errorf("%s cannot view #%s, so Discord does not show them message %d", c.user.Name, ch.Name, id)
		return
	}
	c.run(ctx, discordtest.MessageCommand{Name: cmdPinMessage, TargetID: id}, m.ChannelID)
}

// pick picks an option in one of the /settings menus, as the user would
// click it: it runs /settings, finds the menu (the account menu when
// account is set, else the board menu) and selects arg in it.
func (c *Console) pick(ctx context.Context, arg string, account bool) {
	if arg == "" {
		if account {
			c.errorf("usage: /switch ACCOUNT (a username or account id)")
		} else {
			c.errorf("usage: /board BOARD (a board name or id)")
		}
		return
	}
	settings, err := c.interact(ctx, discordtest.ChatInput{Name: cmdSettings}, c.channel.ID)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	var menu *component
	for i, comp := range settings.components {
		if account && comp.CustomID == switchMenuID || !account && strings.HasPrefix(comp.CustomID, boardMenuIDPrefix) {
			menu = &settings.components[i]
			break
		}
	}
	if menu == nil {
		// No menu: /settings said why (nothing linked, say).
		c.println(settings.text)
		return
	}
	value, ok := matchOption(menu.Options, arg)
	if !ok {
		a, demo := findAccount(arg)
		if !account || !demo {
			c.errorf("the menu has no option %q; it offers %s", arg, optionList(menu.Options))
			return
		}
		// A Discord client offers only the menu's options; a modified one
		// can send any value. Send it, to show the bot refuses it.
		value = a.ID
		c.printf("(@%s is not in %s's menu; sending it anyway, as a modified Discord client could)\n", a.Username, c.user.Name)
	}
	c.run(ctx, discordtest.SelectMenu{CustomID: menu.CustomID, Values: []string{value}, MessageID: settings.messageID}, c.channel.ID)
}

// whenFull picks arg, queue or skip, in the /settings menu of what /pin
// does at the limit when it does not say, as the user would click it.
func (c *Console) whenFull(ctx context.Context, arg string) {
	arg = strings.ToLower(arg)
	if arg != "queue" && arg != "skip" {
		c.errorf("usage: /whenfull queue or /whenfull skip")
		return
	}
	settings, err := c.interact(ctx, discordtest.ChatInput{Name: cmdSettings}, c.channel.ID)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	menu := findComponent(settings.components, func(id string) bool { return id == whenFullMenuID })
	if menu == nil {
		// No menu: /settings said why (nothing linked, say).
		c.println(settings.text)
		return
	}
	value, ok := matchOption(menu.Options, arg)
	if !ok {
		c.errorf("the menu has no option %q; it offers %s", arg, optionList(menu.Options))
		return
	}
	c.run(ctx, discordtest.SelectMenu{CustomID: menu.CustomID, Values: []string{value}, MessageID: settings.messageID}, c.channel.ID)
}

// cancel presses one of the cancel controls of /queue, as the user
// would: it runs /queue, then picks a message in its menu ("/cancel N",
// N the number /queue shows before the message's waiting pins, or the
// message's ID) or presses an account's "Cancel all" button ("/cancel
// all", naming the account when several have one).
func (c *Console) cancel(ctx context.Context, arg string) {
	fields := strings.Fields(arg)
	all := len(fields) > 0 && strings.EqualFold(fields[0], "all")
	if len(fields) == 0 || len(fields) > 2 || !all && len(fields) != 1 {
		c.errorf("usage: /cancel N (a message's number in /queue, or its ID) or /cancel all [ACCOUNT]")
		return
	}
	var queue answer
	if c.queue != nil && c.queueUser == c.user.ID && c.queueInChn == c.channel.ID {
		queue = *c.queue
	} else {
		var err error
		if queue, err = c.interact(ctx, discordtest.ChatInput{Name: cmdQueue}, c.channel.ID); err != nil {
			c.errorf("%v", err)
			return
		}
	}
	if all {
		c.cancelAll(ctx, queue, fields[1:])
		return
	}
	menu := findComponent(queue.components, func(id string) bool { return id == cancelMenuID })
	if menu == nil {
		c.printf("(No pin is waiting: /queue shows no menu to cancel with.)\n")
		c.println(queue.text)
		return
	}
	value, ok := cancelOption(menu.Options, fields[0])
	if !ok {
		c.errorf("the menu has no message %q; it offers %s", fields[0], optionList(menu.Options))
		return
	}
	c.run(ctx, discordtest.SelectMenu{CustomID: menu.CustomID, Values: []string{value}, MessageID: queue.messageID}, c.channel.ID)
}

// cancelAll presses the "Cancel all" button of the account named (by
// username or id), or the only one there is, on the /queue reply queue.
func (c *Console) cancelAll(ctx context.Context, queue answer, named []string) {
	var buttons []component
	for _, comp := range queue.components {
		if strings.HasPrefix(comp.CustomID, cancelAllIDPrefix) {
			buttons = append(buttons, comp)
		}
	}
	var press *component
	switch {
	case len(buttons) == 0:
		c.printf("(No pin is waiting: /queue shows no \"Cancel all\" button.)\n")
		c.println(queue.text)
		return
	case len(named) == 1:
		want := named[0]
		if a, ok := findAccount(want); ok {
			want = a.ID
		}
		for i, b := range buttons {
			if strings.TrimPrefix(b.CustomID, cancelAllIDPrefix) == want {
				press = &buttons[i]
			}
		}
		if press == nil {
			c.errorf("no account %q has waiting pins; the buttons are %s", named[0], buttonList(buttons))
			return
		}
	case len(buttons) == 1:
		press = &buttons[0]
	default:
		c.errorf("several accounts have waiting pins: name one, /cancel all ACCOUNT; the buttons are %s", buttonList(buttons))
		return
	}
	c.run(ctx, discordtest.Button{CustomID: press.CustomID, MessageID: queue.messageID}, c.channel.ID)
}

// findComponent returns the first component whose custom ID matches, or
// nil.
func findComponent(cs []component, match func(customID string) bool) *component {
	for i := range cs {
		if match(cs[i].CustomID) {
			return &cs[i]
		}
	}
	return nil
}

// cancelOption finds the option of /queue's message menu that arg names:
// the message's number in /queue (the option "Message N: …"), or its ID
// (the option's value is "account/message").
func cancelOption(opts []menuOption, arg string) (string, bool) {
	for _, o := range opts {
		if strings.HasPrefix(o.Label, "Message "+arg+":") {
			return o.Value, true
		}
	}
	for _, o := range opts {
		if _, msg, _ := strings.Cut(o.Value, "/"); msg == arg {
			return o.Value, true
		}
	}
	return "", false
}

func buttonList(bs []component) string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = strconv.Quote(b.Label)
	}
	return strings.Join(names, ", ")
}

// matchOption finds the option arg names: by value, or by label (without
// its @ and markdown escapes), ignoring case.
func matchOption(opts []menuOption, arg string) (string, bool) {
	want := normalizeName(arg)
	for _, o := range opts {
		if o.Value == arg || normalizeName(o.Label) == want {
			return o.Value, true
		}
	}
	return "", false
}

// normalizeName lowers s and drops a leading @ and markdown escapes.
func normalizeName(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), `\`, "")
	return strings.ToLower(strings.TrimPrefix(s, "@"))
}

func optionList(opts []menuOption) string {
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = strconv.Quote(o.Label)
	}
	return strings.Join(names, ", ")
}

// findAccount finds a demo Pinterest account by id or username.
func findAccount(arg string) (demoAccount, bool) {
	want := normalizeName(arg)
	for _, a := range accounts {
		if a.ID == arg || strings.ToLower(a.Username) == want {
			return a, true
		}
	}
	return demoAccount{}, false
}

// link runs /link, then opens the address it answered with, the
// Pinterest stand-in signed in as the account arg names (by default the
// first demo account the user has not linked), which approves and sends
// the browser to the bot's callback; the browser signs in with Discord as
// the console's user and confirms on the page that follows.
func (c *Console) link(ctx context.Context, arg string) {
	var acct demoAccount
	if arg != "" {
		a, ok := findAccount(arg)
		if !ok {
			c.errorf("no demo Pinterest account %q; there are %s", arg, accountList())
			return
		}
		acct = a
	} else {
		acct = c.defaultLinkAccount(ctx)
	}
	ans, err := c.interact(ctx, discordtest.ChatInput{Name: cmdLink}, c.channel.ID)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	c.println(ans.text)
	authURL := ""
	for _, comp := range ans.components {
		if strings.HasPrefix(comp.URL, c.sb.pinterest.AuthURL()) {
			authURL = comp.URL
		}
	}
	if authURL == "" {
		for _, f := range strings.Fields(ans.text) {
			if strings.HasPrefix(f, c.sb.pinterest.AuthURL()) {
				authURL = f
			}
		}
	}
	if authURL == "" {
		return // the bot gave no address, and said why
	}
	c.printf("Browser: opening the address; the Pinterest stand-in is signed in as @%s and approves.\n", acct.Username)
	confirmShown := false
	_, err = c.sb.approve(ctx, authURL, acct, c.user.ID.String(), func(p page) {
		switch {
		case p.Title == "Confirm the link" && confirmShown:
			c.printf("Browser: signed in with Discord as %s; pressing confirm.\n", c.user.Name)
		case p.Title == "Confirm the link":
			confirmShown = true
			c.printf("Browser: %s: %s\n", p.Title, p.Message)
			c.printf("Browser: signing in with Discord as %s, as the page asks.\n", c.user.Name)
		default:
			c.printf("Browser: %s: %s\n", p.Title, p.Message)
		}
	})
	if _, refused := isLinkRefused(err); err != nil && !refused {
		c.errorf("%v", err)
	}
}

// defaultLinkAccount is the first demo account the user has not linked,
// or the first demo account.
func (c *Console) defaultLinkAccount(ctx context.Context) demoAccount {
	lu, err := c.sb.links.User(ctx, c.user.ID.String())
	if err == nil {
		for _, a := range accounts {
			linked := false
			for _, id := range lu.Accounts {
				linked = linked || id == a.ID
			}
			if !linked {
				return a
			}
		}
	}
	return accounts[0]
}

func accountList() string {
	names := make([]string, len(accounts))
	for i, a := range accounts {
		names[i] = "@" + a.Username + " (" + a.ID + ")"
	}
	return strings.Join(names, ", ")
}

func (c *Console) unlink(ctx context.Context, arg string) {
	if arg == "" {
		c.errorf("usage: /unlink ACCOUNT (a username or account id)")
		return
	}
	opts := []discordtest.CommandOption{{Name: "account", Value: strings.TrimPrefix(arg, "@")}}
	c.run(ctx, discordtest.ChatInput{Name: cmdUnlink, Options: opts}, c.channel.ID)
}

// as makes the console act as another demo user, in #general if the
// current channel is hidden from them.
func (c *Console) as(arg string) {
	want := strings.ToLower(strings.TrimPrefix(arg, "@"))
	for _, u := range users {
		if strings.ToLower(u.Name) == want || u.ID.String() == arg {
			c.user = u
			if !u.canView(c.channel) {
				c.channel = channels[0]
			}
			c.printf("You are %s in #%s.\n", c.user.Name, c.channel.Name)
			return
		}
	}
	c.errorf("no demo user %q; there are %s", arg, userList())
}

func userList() string {
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Name
	}
	return strings.Join(names, ", ")
}

// setChannel moves the console to a channel the user can view.
func (c *Console) setChannel(arg string) {
	want := strings.ToLower(strings.TrimPrefix(arg, "#"))
	for _, ch := range channels {
		if ch.Name == want || ch.ID.String() == want {
			if !c.user.canView(ch) {
				c.errorf("%s cannot view #%s", c.user.Name, ch.Name)
				return
			}
			c.channel = ch
			c.printf("You are %s in #%s.\n", c.user.Name, c.channel.Name)
			return
		}
	}
	names := make([]string, len(channels))
	for i, ch := range channels {
		names[i] = "#" + ch.Name
	}
	c.errorf("no channel %q; there are %s", arg, strings.Join(names, ", "))
}

// listMessages prints the demo messages, then those posted in this run,
// with their links and reactions.
func (c *Console) listMessages() {
	tw := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tCHANNEL\tWHAT\tTEXT\tLINK\tREACTIONS\n")
	for _, m := range messages {
		ch, _ := channelByID(m.Channel)
		sm, _ := c.sb.discord.Message(m.ID)
		fmt.Fprintf(tw, "%d\t#%s\t%s\t%s\thttps://discord.com/channels/%d/%d/%d\t%s\n",
			m.ID, ch.Name, m.About, m.Content, GuildID, m.Channel, m.ID, reactionsText(sm))
	}
	for _, id := range c.sb.postedMessages() {
		m, ok := c.sb.discord.Message(id)
		if !ok {
			continue
		}
		ch, _ := channelByID(m.ChannelID)
		what := plural(len(m.Attachments), "image") + ", posted by " + userName(m.AuthorID)
		fmt.Fprintf(tw, "%d\t#%s\t%s\t%s\t%s\t%s\n", m.ID, ch.Name, what, m.Content, messageURL(m), reactionsText(m))
	}
	if err := tw.Flush(); err != nil && c.err == nil {
		c.err = err
	}
}

// listPins prints what the Pinterest stand-in made in this run.
func (c *Console) listPins() {
	c.printf("Pins the Pinterest stand-in made in this run (it starts empty each run; /settings counts earlier runs too):\n")
	window := c.sb.engine.Config().Window
	for _, a := range accounts {
		pins := c.sb.pinterest.PinsFor(a.ID)
		c.printf("  @%s (%s): %s, at most %d in any %s window\n", a.Username, a.ID, plural(len(pins), "pin"),
			c.sb.pinterest.MaxInWindow(a.ID, window), bot.WindowAdjective(window))
	}
}

// listDMs prints the direct messages the bot sent the current user as
// the user reads them, as replies are.
func (c *Console) listDMs() {
	dms := c.sb.discord.DMs(c.user.ID)
	if len(dms) == 0 {
		c.printf("Pinbot has sent %s no direct message in this run.\n", c.user.Name)
		return
	}
	now := c.clock()
	for _, m := range dms {
		text, err := renderMessage(m, now)
		if err != nil {
			c.errorf("%v", err)
			continue
		}
		c.printf("── DM from Pinbot, %s ──\n%s\n", m.Timestamp.In(now.Location()).Format(timestampLayouts["T"]), text)
	}
}

// plural writes n things: "1 pin", "3 pins".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// answer is what the bot replied to an interaction.
type answer struct {
	// text is what the user reads: the content, embeds and components.
	text string
	// messageID is the message holding the reply's components.
	messageID snowflake.ID
	// components are those of the reply's last message.
	components []component
}

// run runs an interaction and prints the reply.
func (c *Console) run(ctx context.Context, data discordtest.InvocationData, channel snowflake.ID) {
	ans, err := c.interact(ctx, data, channel)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	c.keepQueue(data, ans, channel)
	c.println(ans.text)
}

// keepQueue remembers ans when it shows the user's queue (the answer to
// /queue, or to one of its controls), for /cancel.
func (c *Console) keepQueue(data discordtest.InvocationData, ans answer, channel snowflake.ID) {
	ci, isCmd := data.(discordtest.ChatInput)
	controls := findComponent(ans.components, func(id string) bool {
		return id == cancelMenuID || strings.HasPrefix(id, cancelAllIDPrefix)
	}) != nil
	// A control of the queue's message answers by updating that message.
	onQueue := false
	if c.queue != nil {
		switch d := data.(type) {
		case discordtest.SelectMenu:
			onQueue = d.MessageID == c.queue.messageID
		case discordtest.Button:
			onQueue = d.MessageID == c.queue.messageID
		}
	}
	if isCmd && ci.Name == cmdQueue || controls || onQueue {
		c.queue, c.queueUser, c.queueInChn = &ans, c.user.ID, channel
	}
}

// interact creates an interaction as the current user in channel and
// waits for the bot's whole reply.
func (c *Console) interact(ctx context.Context, data discordtest.InvocationData, channel snowflake.ID) (answer, error) {
	in, err := c.sb.discord.Interact(discordtest.Invocation{ChannelID: channel, UserID: c.user.ID, Data: data})
	if err != nil {
		return answer{}, fmt.Errorf("sandbox: Discord stand-in: %w", err)
	}
	return c.await(ctx, in)
}

// await waits for the bot's reply to in and renders it. The reply is the
// initial response and, after a deferral, the edit of the original
// message and any followups. The bot sends components (an empty list
// when it has none) with the last part; a part without them is followed
// by another, which await waits PartWait for once a followup is involved.
func (c *Console) await(ctx context.Context, in *discordtest.Interaction) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	rs, err := in.Wait(ctx, 1)
	if err != nil {
		return answer{}, fmt.Errorf("sandbox: waiting for the bot's answer: %w", err)
	}
	first := rs[0]
	if !first.OK() {
		return answer{text: refused(first)}, nil
	}
	var parts []discordtest.Response
	done := true
	switch first.Type {
	case discord.InteractionResponseTypeDeferredCreateMessage, discord.InteractionResponseTypeDeferredUpdateMessage:
		done = false
	default:
		parts = append(parts, first)
	}
	var refusal string
	for n := 2; !done; n++ {
		wctx, wcancel := ctx, context.CancelFunc(func() {})
		if len(parts) > 0 && parts[len(parts)-1].Kind != discordtest.KindEditOriginal {
			wctx, wcancel = context.WithTimeout(ctx, PartWait)
		}
		rs, err = in.Wait(wctx, n)
		wcancel()
		if err != nil {
			if len(parts) > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				break
			}
			return answer{}, fmt.Errorf("sandbox: waiting for the bot's answer: %w", err)
		}
		r := rs[n-1]
		if !r.OK() {
			refusal = refused(r)
			break
		}
		if r.Kind == discordtest.KindEditOriginal && len(parts) > 0 && parts[0].Kind == discordtest.KindEditOriginal {
			parts[0] = r // a later edit replaces the earlier one
		} else {
			parts = append(parts, r)
		}
		done = sentComponents(r.Body)
	}
	ans, err := renderAnswer(parts, refusal, c.clock())
	if err == nil && ans.messageID == 0 {
		if m, ok := in.Original(); ok {
			ans.messageID = m.ID
		}
	}
	return ans, err
}

// refused describes a response Discord refused.
func refused(r discordtest.Response) string {
	return fmt.Sprintf("(Discord refused the bot's %s: %d %s)", r.Kind, r.Code, r.Error)
}

// sentComponents reports whether a request's JSON body has a components
// key.
func sentComponents(body json.RawMessage) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return false
	}
	_, ok := m["components"]
	return ok
}

// renderMessage renders a message as its reader sees it: its content,
// embeds and components, as renderAnswer does a reply's.
func renderMessage(m discordtest.Message, now time.Time) (string, error) {
	var texts []string
	if m.Content != "" {
		texts = append(texts, renderMarkdown(m.Content, now))
	}
	if len(m.Embeds) > 0 {
		texts = append(texts, renderEmbeds(m.Embeds, now))
	}
	cs, err := parseComponents(m.Components)
	if err != nil {
		return "", err
	}
	if len(cs) > 0 {
		texts = append(texts, renderComponents(cs))
	}
	return strings.Join(texts, "\n"), nil
}

// renderAnswer renders the parts of a reply as the user reads them.
func renderAnswer(parts []discordtest.Response, refusal string, now time.Time) (answer, error) {
	var ans answer
	var texts []string
	for _, p := range parts {
		if p.Data == nil {
			continue
		}
		if p.Data.HasContent && p.Data.Content != "" {
			texts = append(texts, renderMarkdown(p.Data.Content, now))
		}
		if len(p.Data.Embeds) > 0 {
			texts = append(texts, renderEmbeds(p.Data.Embeds, now))
		}
		if sentComponents(p.Body) {
			cs, err := parseComponents(p.Data.Components)
			if err != nil {
				return answer{}, err
			}
			ans.components, ans.messageID = cs, p.MessageID
		}
	}
	if len(ans.components) > 0 {
		texts = append(texts, renderComponents(ans.components))
	}
	if refusal != "" {
		texts = append(texts, refusal)
	}
	ans.text = strings.Join(texts, "\n")
	return ans, nil
}
