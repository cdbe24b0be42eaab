package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// page is what a user reads in the browser tab.
type page struct {
	Title   string
	Message string
}

// Pages the handler sends. Messages name the next step in Discord.
var (
	pageNotFound = page{"Not found", "There is nothing here."}
	pageMethod   = page{"Method not allowed", "This address only answers GET requests."}
	pageMissing  = page{"Link not valid",
		"This address is missing the parts Pinterest adds to it. Run /link in Discord to get a new link."}
	pageStateInvalid = page{"Link not valid",
		"This link is not valid: it was already used, or it did not come from pinbot. Nothing was linked. Run /link in Discord to get a new link."}
	pageStateExpired = page{"Link expired",
		"This link has expired. Nothing was linked. Run /link in Discord to get a new link."}
	pageDenied = page{"Nothing linked",
		"You did not allow pinbot to use your Pinterest account, so nothing was linked. Run /link in Discord if you change your mind."}
	pageCodeRejected = page{"Nothing linked",
		"Pinterest did not accept this authorization (it may have been used already). Nothing was linked. Run /link in Discord to try again."}
	pagePinterestDown = page{"Pinterest did not answer",
		"Pinterest did not answer; run /link again. Nothing was linked."}
	pageDiscordDown = page{"Discord did not answer",
		"Discord did not answer when pinbot asked who ran /link; run /link again. Nothing was linked."}
	pageDiscordUnknownUser = page{"Nothing linked",
		"Discord does not know the account that ran /link any more. Nothing was linked."}
	pageTooMany = page{"Too many accounts",
		"You have linked " + strconv.Itoa(maxAccounts) + " Pinterest accounts already. Run /unlink in Discord for one of them, then /link again."}
	pageInternal = page{"Something went wrong",
		"pinbot could not finish linking because of a problem on its side. Nothing was linked. Run /link in Discord to try again."}
	pageBusy = page{"Too many links at once",
		"Too many links are waiting for confirmation right now. Nothing was linked. Wait a few minutes, then run /link in Discord again."}

	// The confirmation step's refusals.
	// A link waiting for confirmation lives in memory only: after a
	// restart it is unknown, and the page says that this may be why.
	pageConfirmUnknown = page{"Link request expired",
		"This link request expired or the bot restarted: run /link again in Discord. Nothing was linked."}
	pageConfirmExpired = page{"Link request expired",
		"This link request expired: run /link again in Discord. Nothing was linked."}
	pageOtherBrowser = page{"Nothing linked",
		"This confirmation belongs to the browser that came back from Pinterest, and this is another one (or it does not keep cookies). " +
			"Nothing was linked. Run /link in Discord to start again, and finish in one browser."}
	pageBadCSRF = page{"Nothing linked",
		"This request did not come from the confirmation page pinbot showed (its security token is missing or wrong). " +
			"Nothing was linked, and this link can no longer be confirmed. Run /link in Discord to start again."}
	pageConfirmByGet = page{"Nothing linked",
		"A link is confirmed only with the button on pinbot's confirmation page, never by opening an address. Nothing was linked."}
	pageAlreadyLinked = page{"Already linked",
		"This link was confirmed already; nothing more was stored. You can close this tab and go back to Discord."}
	pageCanceled = page{"Nothing linked",
		"This link was canceled, so nothing was linked. Run /link in Discord to start again."}
	pageCanceledByUser = page{"Nothing linked",
		"You canceled: nothing was linked, and pinbot has forgotten the access Pinterest gave it. " +
			"If someone sent you the link, remove pinbot from the apps connected to your Pinterest account."}
	pageNotSignedIn = page{"Nothing linked",
		"pinbot asks you to sign in with Discord before a link is stored, and you had not. Nothing was linked. Run /link in Discord to start again."}
	pageSignInDeclined = page{"Nothing linked",
		"You did not sign in with Discord, so nothing was linked. Run /link in Discord to start again."}
	pageSignInUnknown = page{"Nothing linked",
		"This Discord sign-in is not valid: it was already used, it expired, the bot restarted, or it did not come from pinbot. Nothing was linked. Run /link again in Discord."}
	pageSignInRejected = page{"Nothing linked",
		"Discord did not accept this sign-in (it may have been used already). Nothing was linked; go back to the confirmation page and sign in again."}
	pageSignInDown = page{"Discord did not answer",
		"Discord did not answer the sign-in; go back to the confirmation page and sign in again. Nothing was linked."}
)

// pageScopesMissing answers a grant that lacks scopes pinbot needs.
func pageScopesMissing(missing []string) page {
	return page{"Nothing linked",
		"Pinterest did not give pinbot every permission it needs: it lacks " + strings.Join(missing, ", ") + ". " +
			"Nothing was linked. Run /link in Discord to try again, and allow everything Pinterest asks for. " +
			"If Pinterest did not ask for these, tell the bot's operator."}
}

// pageCSS styles every page. It is sent inline and allowed by its hash
// in the Content-Security-Policy, which allows nothing else: no script,
// no request to any other address (pictures are data: URLs).
const pageCSS = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#111}` +
	`.warn{border:3px solid #b00;background:#fee;padding:.75rem 1rem;font-weight:bold}` +
	`.who{display:flex;gap:1rem;flex-wrap:wrap}` +
	`.card{flex:1 1 15rem;border:1px solid #ccc;border-radius:.5rem;padding:.75rem}` +
	`.card h2{font-size:1rem;margin:0 0 .5rem}` +
	`.card img,.card .nopic{width:64px;height:64px;border-radius:50%;float:left;margin-right:.75rem;background:#ddd}` +
	`.ok{border:2px solid #070;background:#efe;padding:.5rem 1rem}` +
	`.button,button{font-size:1rem;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;cursor:pointer}` +
	`.small{color:#555;font-size:.875rem}`

// contentSecurityPolicy is sent with every page.
var contentSecurityPolicy = func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; img-src data:; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>pinbot: {{.Title}}</title>
<style>` + pageCSS + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
`

// pageTemplate escapes every field: usernames come from Pinterest and
// error names from the query string.
var pageTemplate = template.Must(template.New("page").Parse(pageHead + `<p>{{.Message}}</p>
</body>
</html>
`))

// confirmView is what the confirmation page shows.
type confirmView struct {
	Title string
	// Message is the warning, the page's first paragraph.
	Message string
	// The Discord user who ran /link.
	DiscordName, DiscordUsername, DiscordID string
	DiscordPic                              template.URL
	// The Pinterest account.
	PinterestName string
	PinterestPic  template.URL
	// Board says where pins go.
	Board string
	// SignInURL, when set, is Discord's authorization page: the browser
	// must sign in there before it may confirm.
	SignInURL string
	// SignedInAs, when set, says the browser signed in with Discord as
	// the user who ran /link.
	SignedInAs string
	// CanConfirm shows the confirm button; the form (with Cancel) is
	// always there.
	CanConfirm    bool
	Action        string
	LinkID, CSRF  string
	Expires       string
	ConfirmButton string
}

var confirmTemplate = template.Must(template.New("confirm").Parse(pageHead + `<p class="warn">{{.Message}}</p>
<div class="who">
<div class="card"><h2>Discord account (ran /link)</h2>{{if .DiscordPic}}<img src="{{.DiscordPic}}" alt="" width="64" height="64">{{else}}<span class="nopic"></span>{{end}}
<p><strong>{{.DiscordName}}</strong><br>@{{.DiscordUsername}}<br><span class="small">ID {{.DiscordID}}</span></p></div>
<div class="card"><h2>Pinterest account (you approved)</h2>{{if .PinterestPic}}<img src="{{.PinterestPic}}" alt="" width="64" height="64">{{else}}<span class="nopic"></span>{{end}}
<p><strong>@{{.PinterestName}}</strong></p></div>
</div>
<p>Once linked, pinbot pins images to this Pinterest account whenever the Discord account above asks it to. {{.Board}}</p>
{{if .SignInURL}}<p>pinbot also asks you to sign in with Discord, to check that you are {{.DiscordName}}.</p>
<p><a class="button" href="{{.SignInURL}}">Sign in with Discord</a></p>
{{end}}{{if .SignedInAs}}<p class="ok">You signed in with Discord as {{.SignedInAs}}: the account that ran /link.</p>
{{end}}<form method="post" action="{{.Action}}">
<input type="hidden" name="link" value="{{.LinkID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{if .CanConfirm}}<button type="submit" name="action" value="confirm">{{.ConfirmButton}}</button>
{{end}}<button type="submit" name="action" value="cancel">Cancel: link nothing</button>
</form>
<p class="small">This page works once, until {{.Expires}}. Nothing is linked until you confirm.</p>
</body>
</html>
`))

// writePage sends p with status.
func writePage(w http.ResponseWriter, status int, p page) {
	render(w, status, pageTemplate, p, p.Message)
}

// render executes t with data and sends it with status and headers that
// keep the page (and the address it answers, which may hold a code) out
// of caches, referrers and frames, and allow nothing but its own style
// and inline pictures. fallback is sent, escaped, should t fail.
func render(w http.ResponseWriter, status int, t *template.Template, data any, fallback string) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		// The templates are fixed and their fields are strings: this
		// cannot fail, but a plain answer is better than none.
		buf.Reset()
		buf.WriteString(template.HTMLEscapeString(fallback))
	}
	setPageHeaders(w.Header())
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// setPageHeaders sets the headers every answer carries, redirects
// included.
func setPageHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
}
