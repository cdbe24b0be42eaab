// Command devcluster runs a pinbot cluster on one machine, for trying it
// out (make run-cluster): three etcd members inside this process, the
// stand-ins of Discord and Pinterest with a few users, guilds and linked
// accounts, and three pinbot processes, each a member of the cluster,
// over them. A console pins as the users and kills, pauses, stops and
// starts members, so that failover can be watched as it happens.
//
// It links etcd's server (the embedded members) and the stand-ins: it is
// a tool of the repository, never shipped; pinbot itself links etcd's
// client only.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web/webtest"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/loopback"
)

const usage = `Commands:
  status              the members: process, ready, partitions and shards held
  pin USER [N]        USER (1-%d) runs /pin on N fresh messages of 5 pictures (N: 1)
  count USER          USER's 12-hour count, as /settings shows it
  ledger              what Pinterest holds of each account: in the last window, and the most in any window
  kill M              SIGKILL member M (1-%d)
  pause M | cont M    SIGSTOP or SIGCONT member M
  stop M | start M    SIGTERM member M (a graceful handover) or start it again
  help | quit
`

func main() {
	var (
		pinbot  = flag.String("pinbot", "bin/pinbot", "the pinbot executable")
		dir     = flag.String("dir", "data/cluster", "the working directory: etcd's data, the members' data directories and logs, the keys")
		members = flag.Int("members", 3, "pinbot processes")
		users   = flag.Int("users", 4, "Discord users, each with a Pinterest account")
		limit   = flag.Int("limit", 100, "pins per account per window (PINBOT_PIN_LIMIT)")
		window  = flag.Duration("window", 12*time.Hour, "the window (PINBOT_PIN_WINDOW)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, config{pinbot: *pinbot, dir: *dir, members: *members, users: *users, limit: *limit, window: *window}, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

type config struct {
	pinbot         string
	dir            string
	members, users int
	limit          int
	window         time.Duration
}

// cluster is the running cluster.
type cluster struct {
	cfg     config
	etcd    *etcdtest.Cluster
	tb      *runner
	dc      *discordtest.Server
	ps      *pinteresttest.Server
	channel discordtest.Channel
	users   []user
	members []*member
	out     io.Writer
}

type user struct {
	id      snowflake.ID
	name    string
	account string
}

// member is one pinbot process and its settings.
type member struct {
	n        int
	addr     string // its cluster address, its id
	httpAddr string
	env      []string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	paused   bool
}

func run(ctx context.Context, cfg config, in io.Reader, out io.Writer) (err error) {
	if cfg.members < 1 || cfg.users < 1 {
		return errors.New("want at least one member and one user")
	}
	if _, err := os.Stat(cfg.pinbot); err != nil {
		return fmt.Errorf("the pinbot executable: %w (make run-cluster builds it)", err)
	}
	if err := fresh(cfg.dir); err != nil {
		return err
	}
	c := &cluster{cfg: cfg, tb: &runner{dir: filepath.Join(cfg.dir, "etcd")}, out: out}
	defer c.close()
	fmt.Fprintln(out, "starting 3 etcd members...")
	if err := c.tb.do(func() { c.etcd = etcdtest.Start(c.tb, 3) }); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if err := c.world(); err != nil {
		return err
	}
	if err := c.prepare(); err != nil {
		return err
	}
	for _, m := range c.members {
		if err := c.start(m); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d pinbot members started; their logs: %s/member*/pinbot.log\n", len(c.members), cfg.dir)
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	// Every gateway shard open on some member: the guild's commands
	// reach the cluster.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for shard := range cfg.members {
		if _, err := c.dc.WaitShardReady(sctx, shard); err != nil {
			return fmt.Errorf("gateway shard %d not open on any member: %w (the members' logs: %s/member*/pinbot.log)", shard, err, cfg.dir)
		}
	}
	fmt.Fprintln(out, "linking the users' Pinterest accounts...")
	for i := range c.users {
		if err := c.link(ctx, i); err != nil {
			return err
		}
	}
	c.status(ctx)
	fmt.Fprintf(out, usage, len(c.users), len(c.members))
	return c.console(ctx, in)
}

// marker names devcluster's working directories: fresh empties only a
// directory that holds it, or none at all.
const marker = ".devcluster"

// fresh makes dir an empty working directory: a new one, or one an
// earlier run left (it holds the marker); any other directory that is
// not empty is refused.
func fresh(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("%s is not empty and not an earlier run's: give another --dir", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, marker), nil, 0o600)
}

// world adds the stand-ins' guild, channel and users.
func (c *cluster) world() error {
	c.dc = discordtest.NewServer(discordtest.WithShardCount(c.cfg.members))
	c.ps = pinteresttest.NewServer()
	g, err := c.dc.AddGuild(discordtest.Guild{Name: "cluster"})
	if err != nil {
		return err
	}
	if c.channel, err = c.dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "pictures"}); err != nil {
		return err
	}
	for i := range c.cfg.users {
		u := user{name: fmt.Sprintf("user%d", i+1), account: strconv.Itoa(9000 + i)}
		c.ps.AddAccount(u.account, u.name, pinteresttest.Board{ID: u.account + "1", Name: "Board of " + u.name})
		m, err := c.dc.AddMember(discordtest.Member{GuildID: g.ID, Username: u.name})
		if err != nil {
			return err
		}
		u.id = m.UserID
		c.users = append(c.users, u)
	}
	return nil
}

// prepare writes the keys and each member's settings.
func (c *cluster) prepare() error {
	key, err := writeSecret(filepath.Join(c.cfg.dir, "pinbot.key"))
	if err != nil {
		return err
	}
	clusterKey, err := writeSecret(filepath.Join(c.cfg.dir, "cluster.key"))
	if err != nil {
		return err
	}
	for i := range c.cfg.members {
		m := &member{n: i + 1}
		if m.addr, err = loopback.Addr(); err != nil {
			return err
		}
		if m.httpAddr, err = loopback.Addr(); err != nil {
			return err
		}
		data := filepath.Join(c.cfg.dir, fmt.Sprintf("member%d", m.n))
		if err := os.MkdirAll(data, 0o700); err != nil {
			return err
		}
		m.logPath = filepath.Join(data, "pinbot.log")
		m.env = []string{
			"DISCORD_TOKEN=" + c.dc.Token(),
			"PINBOT_DISCORD_API_URL=" + c.dc.APIURL(),
			"PINBOT_DISCORD_GATEWAY_URL=" + c.dc.GatewayURL(),
			"PINBOT_SHARDS=" + strconv.Itoa(c.cfg.members),
			"PINTEREST_CLIENT_ID=" + c.ps.ClientID(),
			"PINTEREST_CLIENT_SECRET=" + c.ps.ClientSecret(),
			"PINBOT_PINTEREST_API_URL=" + c.ps.APIBase(),
			"PINBOT_PINTEREST_OAUTH_URL=" + c.ps.AuthURL(),
			"PINBOT_HTTP_ADDR=" + m.httpAddr,
			"PINBOT_PUBLIC_URL=http://" + m.httpAddr,
			"PINBOT_ENCRYPTION_KEY_FILE=" + key,
			"PINBOT_DATA_DIR=" + data,
			"PINBOT_ETCD_ENDPOINTS=" + strings.Join(c.etcd.Endpoints(), ","),
			"PINBOT_CLUSTER_ADDR=" + m.addr,
			"PINBOT_CLUSTER_KEY_FILE=" + clusterKey,
			"PINBOT_PIN_LIMIT=" + strconv.Itoa(c.cfg.limit),
			"PINBOT_PIN_WINDOW=" + c.cfg.window.String(),
			"PINBOT_LOG_LEVEL=info",
			"NO_COLOR=1",
		}
		c.members = append(c.members, m)
	}
	return nil
}

// start starts member m's process, its log appended to its file.
func (c *cluster) start(m *member) error {
	if m.running() {
		return fmt.Errorf("member %d is running", m.n)
	}
	f, err := os.OpenFile(m.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.cfg.pinbot)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: Ctrl-C at the console reaches devcluster
	// alone, which stops the members itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	m.cmd, m.exited, m.paused = cmd, exited, false
	return nil
}

func (m *member) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// waitReady waits until every running member's /readyz answers 200.
func (c *cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, m := range c.members {
		for m.running() && ready(ctx, m) != nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("member %d not ready: %w (its log: %s)", m.n, ready(context.Background(), m), m.logPath)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if !m.running() {
			return fmt.Errorf("member %d exited: see %s", m.n, m.logPath)
		}
	}
	return nil
}

// link links user i's account through /link and the OAuth flow, as a
// browser would.
func (c *cluster) link(ctx context.Context, i int) error {
	u := c.users[i]
	c.ps.SetLoggedIn(u.account)
	text, err := c.interact(ctx, u, discordtest.ChatInput{Name: "link"})
	if err != nil {
		return err
	}
	start := strings.Index(text, "<http")
	end := strings.Index(text[max(start, 0):], ">")
	if start < 0 || end < 0 {
		return fmt.Errorf("/link for %s answered %q, without an address", u.name, text)
	}
	b := webtest.NewBrowser(nil)
	page, err := b.Get(ctx, text[start+1:start+end])
	if err != nil {
		return fmt.Errorf("linking %s: %w", u.name, err)
	}
	if page, err = b.Submit(ctx, page, webtest.Confirm); err != nil {
		return fmt.Errorf("linking %s: %w", u.name, err)
	}
	fmt.Fprintf(c.out, "  %s: %s\n", u.name, page.Message)
	return nil
}

// interact runs an interaction as u in the cluster's channel and returns
// the text of its reply.
func (c *cluster) interact(ctx context.Context, u user, data discordtest.InvocationData) (string, error) {
	in, err := c.dc.Interact(discordtest.Invocation{ChannelID: c.channel.ID, UserID: u.id, Data: data})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rs, err := in.Wait(ctx, 2)
	if err != nil {
		return "", fmt.Errorf("no answer: %w", err)
	}
	if rs[0].Type != discord.InteractionResponseTypeDeferredCreateMessage || rs[1].Data == nil {
		return "", fmt.Errorf("unexpected answers %+v", rs)
	}
	return rs[1].Data.Content, nil
}

// console reads commands until quit, the end of input or ctx's end.
func (c *cluster) console(ctx context.Context, in io.Reader) error {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		fmt.Fprint(c.out, "cluster> ")
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			fmt.Fprintln(c.out)
			return nil
		case line, ok = <-lines:
			if !ok {
				return nil
			}
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "quit" || f[0] == "exit" {
			return nil
		}
		if err := c.command(ctx, f); err != nil {
			fmt.Fprintln(c.out, "error:", err)
		}
	}
}

func (c *cluster) command(ctx context.Context, f []string) error {
	arg := func(i, max int, what string) (int, error) {
		if len(f) <= i {
			return 0, fmt.Errorf("%s: which %s (1-%d)?", f[0], what, max)
		}
		n, err := strconv.Atoi(f[i])
		if err != nil || n < 1 || n > max {
			return 0, fmt.Errorf("%s: %q is not a %s from 1 to %d", f[0], f[i], what, max)
		}
		return n, nil
	}
	switch f[0] {
	case "help":
		fmt.Fprintf(c.out, usage, len(c.users), len(c.members))
	case "status":
		c.status(ctx)
	case "ledger":
		for _, u := range c.users {
			held := 0
			since := time.Now().Add(-c.cfg.window)
			for _, p := range c.ps.PinsFor(u.account) {
				if p.CreatedAt.After(since) {
					held++
				}
			}
			fmt.Fprintf(c.out, "  %s (account %s): %d in the last %v, at most %d in any window (limit %d)\n",
				u.name, u.account, held, c.cfg.window, c.ps.MaxInWindow(u.account, c.cfg.window), c.cfg.limit)
		}
	case "pin", "count":
		n, err := arg(1, len(c.users), "user")
		if err != nil {
			return err
		}
		u := c.users[n-1]
		var data discordtest.InvocationData = discordtest.ChatInput{Name: "settings"}
		if f[0] == "pin" {
			msgs := 1
			if len(f) > 2 {
				if msgs, err = strconv.Atoi(f[2]); err != nil || msgs < 1 || msgs > 5 {
					return fmt.Errorf("pin: %q: want 1 to 5 messages", f[2])
				}
			}
			ids, err := c.messages(msgs)
			if err != nil {
				return err
			}
			data = discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{{Name: "messages", Value: ids}}}
		}
		text, err := c.interact(ctx, u, data)
		if err != nil {
			return err
		}
		fmt.Fprintln(c.out, text)
	case "kill", "pause", "cont", "stop", "start":
		n, err := arg(1, len(c.members), "member")
		if err != nil {
			return err
		}
		return c.signal(c.members[n-1], f[0])
	default:
		return fmt.Errorf("unknown command %q (help lists them)", f[0])
	}
	return nil
}

// messages adds n messages of five pictures each and returns their IDs.
func (c *cluster) messages(n int) (string, error) {
	var ids []string
	for range n {
		atts := make([]discordtest.Attachment, 5)
		for j := range atts {
			atts[j] = discordtest.Attachment{Filename: fmt.Sprintf("picture%d.png", j+1), ContentType: "image/png", Width: 64, Height: 64}
		}
		msg, err := c.dc.AddMessage(discordtest.Message{ChannelID: c.channel.ID, Content: "five pictures", Attachments: atts})
		if err != nil {
			return "", err
		}
		ids = append(ids, msg.ID.String())
	}
	return strings.Join(ids, " "), nil
}

func (c *cluster) signal(m *member, what string) error {
	if what == "start" {
		if err := c.start(m); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "member %d started (it joins once its previous lease, if any, expired)\n", m.n)
		return nil
	}
	if !m.running() {
		return fmt.Errorf("member %d is not running", m.n)
	}
	sig := map[string]syscall.Signal{"kill": syscall.SIGKILL, "pause": syscall.SIGSTOP, "cont": syscall.SIGCONT, "stop": syscall.SIGTERM}[what]
	if err := m.cmd.Process.Signal(sig); err != nil {
		return err
	}
	m.paused = what == "pause"
	fmt.Fprintf(c.out, "member %d: %v sent\n", m.n, sig)
	if what == "kill" || what == "stop" {
		select {
		case <-m.exited:
		case <-time.After(time.Minute):
			return fmt.Errorf("member %d still running a minute after %v", m.n, sig)
		}
	}
	return nil
}

// status prints each member's process and readiness, and what `pinbot
// cluster status` reads from etcd.
func (c *cluster) status(ctx context.Context) {
	for _, m := range c.members {
		state := "down"
		switch {
		case m.running() && m.paused:
			state = "paused"
		case m.running():
			state = "running, ready"
			if err := ready(ctx, m); err != nil {
				state = "running, not ready: " + err.Error()
			}
		}
		fmt.Fprintf(c.out, "member %d (%s, http %s): %s\n", m.n, m.addr, m.httpAddr, state)
	}
	cmd := exec.CommandContext(ctx, c.cfg.pinbot, "cluster", "status")
	cmd.Env = append(os.Environ(), "PINBOT_ETCD_ENDPOINTS="+strings.Join(c.etcd.Endpoints(), ","))
	cmd.Stdout, cmd.Stderr = c.out, c.out
	_ = cmd.Run()
}

// close stops the members (SIGTERM, then SIGKILL a minute later), then
// etcd and the stand-ins.
func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		if !m.running() {
			continue
		}
		wg.Go(func() {
			if m.paused {
				_ = m.cmd.Process.Signal(syscall.SIGCONT)
			}
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.exited:
			case <-time.After(time.Minute):
				_ = m.cmd.Process.Kill()
				<-m.exited
			}
		})
	}
	wg.Wait()
	c.tb.cleanup()
	if c.dc != nil {
		c.dc.Close()
	}
	if c.ps != nil {
		c.ps.Close()
	}
}

// ready asks member m's /readyz: nil when it answers 200, else what it
// says keeps the member from serving.
func ready(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.httpAddr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return errors.New(strings.Join(strings.Fields(string(body)), " "))
	}
	return nil
}

func writeSecret(path string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o600)
}

// runner is what etcdtest needs of a test, for a program: its Fatalf
// ends the call do runs.
type runner struct {
	dir      string
	n        int
	cleanups []func()
}

type fatal struct{ err error }

func (r *runner) Helper()                      {}
func (r *runner) Failed() bool                 { return false }
func (r *runner) Logf(format string, a ...any) {}
func (r *runner) Errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "devcluster: etcd: "+format+"\n", a...)
}
func (r *runner) Fatalf(format string, a ...any) { panic(fatal{fmt.Errorf(format, a...)}) }
func (r *runner) Cleanup(f func())               { r.cleanups = append(r.cleanups, f) }
func (r *runner) TempDir() string {
	r.n++
	d := filepath.Join(r.dir, strconv.Itoa(r.n))
	if err := os.MkdirAll(d, 0o700); err != nil {
		r.Fatalf("%v", err)
	}
	return d
}

// do runs f, returning the error a Fatalf in it raised.
func (r *runner) do(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			ft, ok := p.(fatal)
			if !ok {
				panic(p)
			}
			err = ft.err
		}
	}()
	f()
	return nil
}

func (r *runner) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}
