//go:build !race && unix

// The bot process this test starts opens a real disgo gateway
// connection, whose close races with its heartbeat (upstream): the child
// is this test binary, so it must be built without -race. The test runs
// in `make gateway`.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/loopback"
)

// child is a pinbot process running the bot, with its stderr (JSON log
// lines) kept.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	logs   strings.Builder
	ready  chan struct{} // closed at the "pinbot running" line
	exited chan struct{} // closed once stderr is drained and the process waited for
	err    error         // of Wait, once exited
}

// startChild starts this test binary as pinbot (see TestMain) with env
// added to the environment and waits until it logs that the bot runs.
func startChild(ctx context.Context, t *testing.T, env []string) *child {
	t.Helper()
	c := spawnChild(t, env, nil)
	c.waitReady(ctx)
	return c
}

// spawnChild starts this test binary as pinbot with env added to the
// environment and returns at once. onLine, when not nil, is called with
// each line of its stderr as it comes, on the goroutine that reads it.
func spawnChild(t *testing.T, env []string, onLine func(line string)) *child {
	t.Helper()
	c := &child{t: t, ready: make(chan struct{}), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0])
	c.cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.logs.WriteString(line + "\n")
			c.mu.Unlock()
			if onLine != nil {
				onLine(line)
			}
			if strings.Contains(line, `"message":"pinbot running"`) {
				once.Do(func() { close(c.ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		c.err = c.cmd.Wait()
	}()
	// A test that fails before stopping its child leaves no pinbot behind.
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// waitReady waits until c logs that the bot runs.
func (c *child) waitReady(ctx context.Context) {
	c.t.Helper()
	select {
	case <-c.ready:
	case <-c.exited:
		c.t.Fatalf("pinbot exited before running: %v\n%s", c.err, c.stderr())
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.exited
		c.t.Fatalf("pinbot not running: %v\n%s", ctx.Err(), c.stderr())
	}
}

func (c *child) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs.String()
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-c.exited
}

// stop sends SIGTERM and checks the process exits 0.
func (c *child) stop(ctx context.Context) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.exited
		c.t.Fatalf("pinbot did not stop on SIGTERM\n%s", c.stderr())
	}
	if c.err != nil {
		c.t.Fatalf("pinbot after SIGTERM: %v, want exit status 0\n%s", c.err, c.stderr())
	}
}

// standInEnv is the environment of a pinbot process running the bot between
// the stand-ins dc and ps, reaching Pinterest's API at apiURL, on a fresh
// loopback address.
func standInEnv(t *testing.T, dc *discordtest.Server, ps *pinteresttest.Server, apiURL, keyFile, dataDir string) []string {
	t.Helper()
	addr := freeAddr(t)
	return []string{
		discordTokenEnv + "=" + dc.Token(),
		"PINBOT_DISCORD_API_URL=" + dc.APIURL(),
		"PINBOT_DISCORD_GATEWAY_URL=" + dc.GatewayURL(),
		"PINBOT_SHARDS=1",
		"PINTEREST_CLIENT_ID=" + ps.ClientID(),
		"PINTEREST_CLIENT_SECRET=" + ps.ClientSecret(),
		"PINBOT_PINTEREST_API_URL=" + apiURL,
		"PINBOT_PINTEREST_OAUTH_URL=" + ps.AuthURL(),
		"PINBOT_HTTP_ADDR=" + addr,
		"PINBOT_PUBLIC_URL=http://" + addr,
		"PINBOT_ENCRYPTION_KEY_FILE=" + keyFile,
		"PINBOT_DATA_DIR=" + dataDir,
		"PINBOT_LOG_LEVEL=info",
		"NO_COLOR=1",
	}
}

// freeAddr returns a loopback address no one listens on now, which the
// kernel does not hand out meanwhile (see package loopback): a pinbot
// process binds it later, again at each restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := loopback.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// reply runs an interaction to its edited reply (deferral, then edit)
// and returns the edit.
func reply(ctx context.Context, t *testing.T, dc *discordtest.Server, inv discordtest.Invocation) (*discordtest.Interaction, discordtest.Response) {
	t.Helper()
	in, err := dc.Interact(inv)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := in.Wait(ctx, 2)
	if err != nil {
		t.Fatalf("interaction %d: %v; responses %+v", in.ID, err, in.Responses())
	}
	if !rs[0].OK() || rs[0].Type != discord.InteractionResponseTypeDeferredCreateMessage || !rs[1].OK() || rs[1].Data == nil {
		t.Fatalf("interaction %d: responses %+v, want a deferral and an edit", in.ID, rs)
	}
	return in, rs[1]
}

var (
	linkURL   = regexp.MustCompile(`<(http[^>]+)>`)
	settingsN = regexp.MustCompile(`12-hour pins: (\d+)/100`)
	pinCountN = regexp.MustCompile(`12-hour pin count: (\d+)/100`)
)

// TestDisgoGatewayKill runs the bot as a child process against stand-ins
// living in the test, kills it with SIGKILL in the middle of a /pin batch
// of 10 images, starts it again on the same data directory and checks the
// safety invariant from Pinterest's side: the account's 12-hour count
// includes every pin the stand-in created; and that no interaction was
// answered twice. The kill comes after the stand-in made k pins, either
// while pin k+1 is in flight (the stand-in holds the request: that pin is
// never made), or once pin k+1 is made but its answer has not reached the
// bot (a proxy keeps it: the ambiguous case, which must count as used).
// It also checks a clean stop (SIGTERM, exit 0), the count `pinbot
// accounts` reads afterwards, and that the logs show no secret.
func TestDisgoGatewayKill(t *testing.T) {
	t.Parallel()
	t.Run("request in flight", func(t *testing.T) {
		t.Parallel()
		killMidBatch(t, false)
	})
	t.Run("answer lost", func(t *testing.T) {
		t.Parallel()
		killMidBatch(t, true)
	})
}

// holdingTransport forwards requests to the Pinterest stand-in; the
// hold-th POST /v5/pins is made, but its answer is dropped and the request
// hangs until the client gives up, after telling held.
type holdingTransport struct {
	mu   sync.Mutex
	pins int
	hold int
	held chan<- struct{}
}

func (h *holdingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.Method != http.MethodPost || req.URL.Path != pinteresttest.PathPins {
		return resp, err
	}
	h.mu.Lock()
	h.pins++
	hold := h.pins == h.hold
	h.mu.Unlock()
	if !hold {
		return resp, err
	}
	if resp != nil {
		resp.Body.Close()
	}
	h.held <- struct{}{}
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// killMidBatch is TestDisgoGatewayKill, with the answer of pin k+1 lost
// (lostAnswer) or its request held.
func killMidBatch(t *testing.T, lostAnswer bool) {
	const k = 4 // pins the stand-in makes, and the bot hears of, before the kill
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dc := discordtest.NewServer()
	defer dc.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()
	const account = "4242"
	ps.AddAccount(account, "kim", pinteresttest.Board{ID: "42421", Name: "Ideas"}, pinteresttest.Board{ID: "42422", Name: "Later"})
	// The bot reaches the API through a proxy, which loses one answer in
	// the lostAnswer case.
	arrived := make(chan struct{}, 1)
	target, err := url.Parse(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	hold := &holdingTransport{held: arrived}
	proxy.Transport = hold
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	api := httptest.NewServer(proxy)
	defer api.Close()

	g, err := dc.AddGuild(discordtest.Guild{Name: "kill"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "general"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	user := m.UserID
	var ids []string
	for i := range 2 {
		atts := make([]discordtest.Attachment, 5)
		for j := range atts {
			atts[j] = discordtest.Attachment{Filename: fmt.Sprintf("m%d-%d.png", i, j), ContentType: "image/png", Width: 64, Height: 64}
		}
		msg, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: "five images", Attachments: atts})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, msg.ID.String())
	}
	extra, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: "one more",
		Attachments: []discordtest.Attachment{{Filename: "x.png", ContentType: "image/png"}}})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	keyFile := writeKey(t, dir, 32, 0o600)
	env := standInEnv(t, dc, ps, api.URL+"/v5", keyFile, dataDir)
	var all []*discordtest.Interaction
	inv := func(data discordtest.InvocationData) discordtest.Invocation {
		return discordtest.Invocation{ChannelID: ch.ID, UserID: user, Data: data}
	}
	settingsCount := func() int {
		t.Helper()
		in, r := reply(ctx, t, dc, inv(discordtest.ChatInput{Name: "settings"}))
		all = append(all, in)
		mm := settingsN.FindStringSubmatch(r.Data.Content)
		if mm == nil {
			t.Fatalf("/settings: %q, want a 12-hour count", r.Data.Content)
		}
		n, _ := strconv.Atoi(mm[1])
		return n
	}

	// First run: link the account through /link and the real OAuth
	// flow, choose its default board in /settings.
	first := startChild(ctx, t, env)
	all = append(all, linkWithBoard(ctx, t, dc, inv, "kim", "42421", "Ideas")...)

	// The batch: 10 images. The stand-in makes k pins; then it holds the
	// next request, or makes the pin and the proxy keeps its answer; then
	// the test kills the bot.
	made := k
	if lostAnswer {
		hold.mu.Lock()
		hold.hold = k + 1
		hold.mu.Unlock()
		made = k + 1
	} else {
		ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Times: k})
		ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Hang: true, Arrived: arrived})
	}
	batch, err := dc.Interact(inv(discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
		{Name: "messages", Value: strings.Join(ids, " ")},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, batch)
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatalf("pin %d never reached Pinterest: %v\n%s", k+1, ctx.Err(), first.stderr())
	}
	first.kill()
	created := len(ps.PinsFor(account))
	if created != made {
		t.Fatalf("the stand-in made %d pins before the kill, want %d", created, made)
	}
	ps.ClearFaults()
	hold.mu.Lock()
	hold.hold = 0
	hold.mu.Unlock()

	// Second run on the same data directory.
	second := startChild(ctx, t, env)
	used := settingsCount()
	created = len(ps.PinsFor(account))
	if used < created {
		t.Errorf("after the kill the account counts %d pins, but Pinterest holds %d: a pin went uncounted", used, created)
	}
	t.Logf("after the kill: Pinterest holds %d pins, the engine counts %d (pending slots count as used)", created, used)

	// The bot goes on pinning, counting on from there.
	in, r := reply(ctx, t, dc, inv(discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
		{Name: "messages", Value: extra.ID.String()},
	}}))
	all = append(all, in)
	if mm := pinCountN.FindStringSubmatch(r.Data.Content); mm == nil || mm[1] != strconv.Itoa(used+1) {
		t.Errorf("/pin after the restart: %q, want 12-hour pin count: %d/100", r.Data.Content, used+1)
	}
	if n := len(ps.PinsFor(account)); n != created+1 {
		t.Errorf("Pinterest holds %d pins, want %d", n, created+1)
	}
	second.stop(ctx)
	if !strings.Contains(second.stderr(), `"message":"pinbot stopped"`) {
		t.Errorf("the second run did not log its clean stop:\n%s", second.stderr())
	}

	// No interaction was answered twice: one initial response each, the
	// killed batch included (the new process never saw it).
	if n := dc.DuplicateAcks(); n != 0 {
		t.Errorf("%d initial responses refused as duplicates", n)
	}
	for _, in := range all {
		callbacks := 0
		for _, r := range in.Responses() {
			if r.Kind == discordtest.KindCallback {
				callbacks++
			}
		}
		if callbacks != 1 {
			t.Errorf("interaction %d got %d initial responses, want 1: %+v", in.ID, callbacks, in.Responses())
		}
	}
	if rs := batch.Responses(); len(rs) != 1 {
		t.Errorf("the killed batch got %d responses, want its deferral alone: %+v", len(rs), rs)
	}

	// What `pinbot accounts` reads once the bot is stopped.
	res := pinbot(t, "", map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": keyFile}, "accounts", "--json", "--data-dir", dataDir)
	res.wantCode(t, "accounts --json", exitOK)
	var listed []listedAccount
	if err := json.Unmarshal([]byte(res.stdout), &listed); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if len(listed) != 1 || listed[0].Account != account || listed[0].Username != "kim" || listed[0].Used < len(ps.PinsFor(account)) {
		t.Errorf("accounts = %+v, want %s (kim) with at least %d pins", listed, account, len(ps.PinsFor(account)))
	}

	// The logs show no secret.
	logs := first.stderr() + second.stderr()
	for _, s := range []string{dc.Token(), ps.ClientSecret(), "pina_", "pinr_"} {
		if strings.Contains(logs, s) {
			t.Errorf("the logs show a secret (%.8s…)", s)
		}
	}
	if t.Failed() {
		t.Logf("first run:\n%s\nsecond run:\n%s", first.stderr(), second.stderr())
	}
}
