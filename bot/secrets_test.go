package bot

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestLogsHoldNoSecretsOnFailures drives /link, a /pin that succeeds, one that
// Pinterest answers 500 with a message echoing the access token, and one
// whose token refresh Pinterest refuses (401, code 283) with a message
// echoing the refresh token, all logging at debug level, and searches the
// logs for the bot token, the interaction tokens, the Pinterest app's
// secret, the account's access and refresh tokens and the OAuth state.
func TestLogsHoldNoSecretsOnFailures(t *testing.T) {
	w := newWorld(t, worldOptions{debugLog: true})
	user := w.addUser("alice")
	cred := w.link(user, "acct", "alice")
	tok := cred.Token()
	secrets := []string{w.dc.Token(), w.ps.ClientSecret(), tok.AccessToken, tok.RefreshToken}

	text, in := w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdLink}})
	secrets = append(secrets, in.Token)
	secrets = append(secrets, stateOf(t, text))

	msg := w.addImages(w.channel.ID, 1, "a cat")
	text, in = w.pin(user, msg.ID.String())
	secrets = append(secrets, in.Token)
	if !strings.Contains(text, "1 pinned") {
		t.Fatalf("first /pin:\n%s", text)
	}

	w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Status: http.StatusInternalServerError,
		Message: "upstream choked on Bearer " + tok.AccessToken})
	text, in = w.pin(user, w.addImages(w.channel.ID, 1, "").ID.String())
	secrets = append(secrets, in.Token)
	if strings.Contains(text, tok.AccessToken) {
		t.Errorf("the reply shows the access token:\n%s", text)
	}

	w.ps.ExpireAccessTokens("acct")
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathToken, Status: http.StatusUnauthorized,
		Code: 283, Message: "The authorization grant is invalid: " + tok.RefreshToken})
	text, in = w.pin(user, w.addImages(w.channel.ID, 1, "").ID.String())
	secrets = append(secrets, in.Token)
	if !strings.Contains(text, "/link") {
		t.Fatalf("/pin after the refused refresh does not ask for /link:\n%s", text)
	}

	logs := w.logs.String()
	for _, want := range []string{"pinterest server error, outcome unknown", "pinterest token request rejected", `"code":283`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs lack %q", want)
		}
	}
	for _, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("secret %q too short to search for", s)
		}
		if strings.Contains(logs, s) {
			t.Errorf("secret %.6s… found in the logs", s)
		}
	}
}

// TestPinterestMessagesHideTheToken: a Pinterest error message that
// echoes the access token reaches neither the error's text nor the log.
func TestPinterestMessagesHideTheToken(t *testing.T) {
	w := newWorld(t, worldOptions{debugLog: true})
	cred := w.ps.AddAccount("acct", "alice")
	sess, err := pinterest.NewSession(cred.Token(), links.Saver(w.links, "acct"))
	if err != nil {
		t.Fatal(err)
	}
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Status: http.StatusBadRequest,
		Message: "bad token " + cred.Token().AccessToken})
	_, err = w.pc.ListBoards(w.ctx, sess)
	if err == nil {
		t.Fatal("ListBoards: no error")
	}
	if strings.Contains(err.Error(), cred.Token().AccessToken) || !strings.Contains(err.Error(), "bad token [REDACTED]") {
		t.Errorf("error text %q", err)
	}
	if strings.Contains(w.logs.String(), cred.Token().AccessToken) {
		t.Errorf("access token in the logs")
	}
}
