//go:build !race

// The tests in this file open a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): they
// run in `make gateway`, without -race.

package sandbox

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDisgoGatewaySandboxPersists runs a scripted console session that
// pins, reads /settings and switches accounts, then starts the sandbox
// again on the same directories and checks the counts are still there,
// while the fresh Pinterest stand-in holds no pin.
func TestDisgoGatewaySandboxPersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	s := startSession(t, dir)
	script := strings.Join([]string{
		"/settings",
		"/pin 1001 1002",
		"settings",
		"/switch alice_art",
		"/pin messages:https://discord.com/channels/900/100/1003",
		"quit",
		"/settings", // after quit: never run
	}, "\n")
	if err := s.con.Serve(s.ctx, strings.NewReader(script), false); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	out := s.out.String()
	for _, w := range []string{
		"▶ @alice_pins (active) — 12-hour pins: 0/100 — default board: Cats",
		"• @alice_art — 12-hour pins: 0/100 — default board: Sketches",
		"Pinterest account @alice_pins, board Cats: 3 pinned.",
		"12-hour pin count: 1/100", "12-hour pin count: 2/100", "12-hour pin count: 3/100",
		"▶ @alice_pins (active) — 12-hour pins: 3/100",
		"Active account is now @alice_art. 12-hour pins: 0/100.",
		"Pinterest account @alice_art, board Sketches: 1 pinned.",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("session output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "Your Pinterest accounts"); n != 2 {
		t.Errorf("/settings answered %d times, want 2 (nothing runs after quit):\n%s", n, out)
	}
	if n, m := len(s.sb.pinterest.PinsFor("7001")), len(s.sb.pinterest.PinsFor("7002")); n != 3 || m != 1 {
		t.Errorf("Pinterest stand-in made %d pins for 7001 and %d for 7002, want 3 and 1", n, m)
	}
	token := s.sb.discord.Token()
	s.close()
	if strings.Contains(s.logs.String(), token) {
		t.Errorf("the logs hold the Discord bot token")
	}
	if t.Failed() {
		t.Logf("logs:\n%s", s.logs)
		t.FailNow()
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, "sandbox.key"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || fi.Size() != keySize {
			t.Errorf("key file: mode %v, %d bytes; want 0600 and %d bytes", fi.Mode().Perm(), fi.Size(), keySize)
		}
	}

	// A new run: fresh stand-ins, the same stores.
	s2 := startSession(t, dir)
	s2.run([]step{
		{line: "/settings", want: []string{
			"• @alice_pins — 12-hour pins: 3/100 — default board: Cats",
			"▶ @alice_art (active) — 12-hour pins: 1/100 — default board: Sketches",
		}},
		{line: "/pinterest", want: []string{"@alice_pins (7001): 0 pins", "@alice_art (7002): 0 pins"}},
		{line: "/pin 1005", want: []string{"4 pinned", "12-hour pin count: 2/100", "12-hour pin count: 5/100"}},
		{line: "/switch @alice_pins", want: []string{"Active account is now @alice_pins. 12-hour pins: 3/100."}},
		// The picture pinned in the first run keeps its attachment, as in
		// Discord: remembered, it is not pinned twice unless asked.
		{line: "/pin 1001", want: []string{"Pinterest account @alice_pins, board Cats: 0 pinned, 1 pinned before.", "already pinned"}},
		{line: "/pin 1001 again:true", want: []string{"Pinterest account @alice_pins, board Cats: 1 pinned.", "12-hour pin count: 4/100"}},
		{line: "/pinterest", want: []string{"@alice_pins (7001): 1 pin,", "@alice_art (7002): 4 pins,"}},
	})
}

// TestDisgoGatewaySandboxCommands drives the other console commands:
// refusals the bot gives (a hidden channel, an account not linked, no
// account), linking through OAuth from the console, an account shared by
// two users, boards, and the console's own mistakes.
func TestDisgoGatewaySandboxCommands(t *testing.T) {
	t.Parallel()
	s := startSession(t, t.TempDir())
	s.run([]step{
		{line: "", want: nil, notWant: []string{"error"}},
		{line: "/frobnicate", want: []string{`error: unknown command "/frobnicate"`}},
		{line: "/pin", want: []string{"error: usage: /pin"}},
		{line: "/pin 1001 1001", want: []string{"Message 1001 is listed twice"}},
		{line: "/pin https://discord.com/channels/900/300/3001", want: []string{"Nothing was pinned: you cannot view that channel"}},
		{line: "/pin https://discord.com/channels/999/100/1001", want: []string{"points into another server"}},
		{line: "/pin 1004", want: []string{"0 pinned, 1 skipped", "this message has no image"}},
		{line: "/pin 1003 board:Travel", want: []string{"Pinterest account @alice_pins, board Travel: 1 pinned."}},
		{line: "/pin 1001 board:Nope", want: []string{"Nope is not one of @alice_pins's boards"}, notWant: []string{"pinned"}},
		{line: "/channel staff", want: []string{"error: alice cannot view #staff"}},
		{line: "/pinmsg 3001", want: []string{"error: alice cannot view #staff"}},
		{line: "/channel art", want: []string{"You are alice in #art."}},
		{line: "/pinmsg 2001", want: []string{"1 pinned", "12-hour pin count: 2/100"}},
		{line: "/switch studio_shared", want: []string{
			"(@studio_shared is not in alice's menu; sending it anyway",
			"You have not linked that Pinterest account",
		}},
		{line: "/board Nope", want: []string{`error: the menu has no option "Nope"; it offers "Cats", "Travel"`}},
		{line: "/as nobody", want: []string{`error: no demo user "nobody"`}},

		{line: "/as carol", want: []string{"You are carol in #art."}},
		{line: "/settings", want: []string{"You have not linked a Pinterest account yet. Run /link to connect one."}},
		{line: "/pin 1001", want: []string{"You have not linked a Pinterest account yet."}},
		{line: "/link studio_shared", want: []string{
			"Open this link to connect a Pinterest account to Pinbot:",
			"[button \"Connect Pinterest\"] " + s.sb.pinterest.AuthURL(),
			"Browser: Confirm the link: Only continue if you are carol (@carol) on Discord and you ran /link yourself.",
			"Browser: Linked: Linked Pinterest account studio_shared to the Discord account carol (@carol)",
		}},
		{line: "/settings", want: []string{"▶ @studio_shared (active) — 12-hour pins: 0/100 — default board: Studio"}},
		{line: "/board Moodboard", want: []string{"Default board for @studio_shared is now Moodboard."}},

		// bob shares the account: his pins count for carol too.
		{line: "/as bob", want: []string{"You are bob in #art."}},
		{line: "/channel staff", want: []string{"You are bob in #staff."}},
		{line: "/pin 3001", want: []string{"Pinterest account @studio_shared, board Moodboard: 1 pinned.", "12-hour pin count: 1/100"}},
		{line: "/as carol", want: []string{"You are carol in #general."}}, // #staff is hidden from carol
		{line: "/settings", want: []string{"@studio_shared (active) — 12-hour pins: 1/100"}},
		{line: "/unlink studio_shared", want: []string{"Unlinked @studio_shared.", "You have no linked account now"}},
		{line: "/settings", want: []string{"You have not linked a Pinterest account yet."}},
		{line: "/as bob", want: []string{"You are bob in #general."}},
		{line: "/settings", want: []string{"▶ @studio_shared (active) — 12-hour pins: 1/100"}},
		{line: "/pinterest", want: []string{"@studio_shared (7003): 1 pin, at most 1 in any 12-hour window"}},
	})
	if n := s.sb.discord.DuplicateAcks(); n != 0 {
		t.Errorf("%d interactions were acknowledged twice", n)
	}
	checkOperatorRoutes(t, s)
}

// checkOperatorRoutes checks what the banner promises an operator: the
// metrics count the session's pins, /readyz is ready, and the dashboard
// answers with the token in the token file and refuses without it.
func checkOperatorRoutes(t *testing.T, s *session) {
	t.Helper()
	start := s.out.Len()
	s.con.Banner(s.ctx)
	banner := s.out.String()[start:]
	token, err := os.ReadFile(s.sb.AdminTokenFile())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(s.sb.AdminTokenFile()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("admin token file: %v, %v; want mode 0600", info, err)
	}
	wantLine := "Operator: " + s.sb.WebURL() + "/metrics, " + s.sb.WebURL() + "/readyz, dashboard " + s.sb.WebURL() + "/admin/login (token in " + s.sb.AdminTokenFile() + ")"
	if !strings.Contains(banner, wantLine) {
		t.Errorf("banner lacks %q:\n%s", wantLine, banner)
	}
	get := func(path string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.sb.WebURL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/metrics", false); code != 200 || !strings.Contains(body, `pinbot_pins_total{result="pinned",source="command"} 2`) ||
		!strings.Contains(body, `pinbot_pins_total{result="pinned",source="message_command"} 1`) {
		t.Errorf("/metrics: %d, pinned pins not 2 by /pin and 1 by Pin to Pinterest:\n%s", code, grepLines(body, "pinbot_pins_total"))
	}
	if code, body := get("/readyz", false); code != 200 || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, _ := get("/admin", false); code != http.StatusUnauthorized {
		t.Errorf("/admin without the token: %d, want 401", code)
	}
	if code, body := get("/admin", true); code != 200 || !strings.Contains(body, "@studio_shared") && !strings.Contains(body, "7003") {
		t.Errorf("/admin with the token: %d, no account 7003 in:\n%.2000s", code, body)
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
