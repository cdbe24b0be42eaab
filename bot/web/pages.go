package web

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"
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
	pageTooMany = page{"Too many accounts",
		"You have linked " + strconv.Itoa(maxAccounts) + " Pinterest accounts already. Run /unlink in Discord for one of them, then /link again."}
	pageInternal = page{"Something went wrong",
		"pinbot could not finish linking because of a problem on its side. Nothing was linked. Run /link in Discord to try again."}
)

// pageTemplate escapes every field: usernames come from Pinterest and
// error names from the query string.
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pinbot: {{.Title}}</title>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</body>
</html>
`))

// writePage sends p with status and headers that keep the page (and the
// address it answers, which may hold a code) out of caches, referrers and
// frames.
func writePage(w http.ResponseWriter, status int, p page) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		// The template is fixed and its fields are strings: this cannot
		// fail, but a plain answer is better than none.
		buf.Reset()
		buf.WriteString(template.HTMLEscapeString(p.Message))
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
