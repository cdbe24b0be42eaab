// Package webtest is a scripted browser for the pages of the bot's OAuth
// callback (package bot/web), in the manner of net/http/httptest: it keeps
// cookies, follows redirects (through the Pinterest and Discord stand-ins'
// authorization pages too), reads each page's title, message and
// confirmation form, and submits that form as a person clicking its
// buttons does. Tests use it, and so does the sandbox.
//
// # Usage
//
//	b := webtest.NewBrowser(nil)
//	p, err := b.Get(ctx, authURL) // Pinterest approves, the callback redirects to the confirmation page
//	// p.Message is the warning; p.SignInURL is set when Discord sign-in is required
//	p, err = b.Get(ctx, p.SignInURL) // the Discord stand-in signs in and redirects back
//	p, err = b.Submit(ctx, p, webtest.Confirm)
//	// p.Title == "Linked"
package webtest

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Buttons of the confirmation form.
const (
	Confirm = "confirm"
	Cancel  = "cancel"
)

// maxPageBytes bounds how much of a page is read.
const maxPageBytes = 1 << 20

// Page is a page the browser ended on.
type Page struct {
	// Status is the HTTP status of the last answer.
	Status int
	// URL is the page's address, after redirects.
	URL string
	// Header is the last answer's.
	Header http.Header
	// Body is the page's HTML.
	Body string
	// Title is the text of the page's <h1>, Message of its first
	// paragraph (the warning on the confirmation page), unescaped.
	Title, Message string
	// Redirects are the addresses passed through on the way, in order.
	Redirects []string

	// FormAction is the confirmation form's action, resolved against
	// URL, and Form its hidden fields; "" and nil on other pages.
	FormAction string
	Form       url.Values
	// CanConfirm reports whether the form has the confirm button (not
	// only Cancel).
	CanConfirm bool
	// SignInURL is the "Sign in with Discord" address, when the page
	// asks for it.
	SignInURL string
}

// Browser is a browser with a cookie jar. It is safe for simultaneous
// use by multiple goroutines, but a person uses one tab at a time.
type Browser struct {
	client *http.Client

	mu        sync.Mutex
	redirects []string
}

// NewBrowser returns a browser sending its requests with a copy of base
// (nil: a new http.Client) given a fresh cookie jar.
func NewBrowser(base *http.Client) *Browser {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	jar, _ := cookiejar.New(nil) // cannot fail without options
	c.Jar = jar
	b := &Browser{client: c}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("webtest: stopped after 10 redirects")
		}
		b.mu.Lock()
		b.redirects = append(b.redirects, req.URL.String())
		b.mu.Unlock()
		return nil
	}
	return b
}

// Client returns the browser's HTTP client, cookie jar included, for
// requests a person's browser would not send.
func (b *Browser) Client() *http.Client { return b.client }

// Get opens u, following redirects, and returns the page it ends on.
func (b *Browser) Get(ctx context.Context, u string) (Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Page{}, fmt.Errorf("webtest: GET %s: %w", u, err)
	}
	return b.Do(req)
}

// Submit presses the button (Confirm or Cancel) of p's confirmation
// form.
func (b *Browser) Submit(ctx context.Context, p Page, button string) (Page, error) {
	if p.FormAction == "" {
		return Page{}, fmt.Errorf("webtest: the page %q has no confirmation form", p.Title)
	}
	form := url.Values{}
	for k, vs := range p.Form {
		form[k] = append([]string(nil), vs...)
	}
	form.Set("action", button)
	return b.PostForm(ctx, p.FormAction, form)
}

// PostForm posts form to u as a form in a page of u's origin does.
func (b *Browser) PostForm(ctx context.Context, u string, form url.Values) (Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return Page{}, fmt.Errorf("webtest: POST %s: %w", u, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.Do(req)
}

// Do sends req with the browser's cookies, following redirects, and
// returns the page it ends on.
func (b *Browser) Do(req *http.Request) (Page, error) {
	b.mu.Lock()
	b.redirects = nil
	b.mu.Unlock()
	resp, err := b.client.Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("webtest: %s %s: %w", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes))
	if err != nil {
		return Page{}, fmt.Errorf("webtest: %s %s: reading the page: %w", req.Method, req.URL, err)
	}
	p := ParsePage(string(body), resp.Request.URL)
	p.Status, p.Header, p.URL = resp.StatusCode, resp.Header, resp.Request.URL.String()
	b.mu.Lock()
	p.Redirects = append([]string(nil), b.redirects...)
	b.mu.Unlock()
	return p, nil
}

var (
	h1Re     = regexp.MustCompile(`(?s)<h1>(.*?)</h1>`)
	pRe      = regexp.MustCompile(`(?s)<p(?:\s[^>]*)?>(.*?)</p>`)
	formRe   = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
	hiddenRe = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)
	signInRe = regexp.MustCompile(`<a class="button" href="([^"]*)">Sign in with Discord</a>`)
	tagRe    = regexp.MustCompile(`<[^>]*>`)
)

// ParsePage reads a page of the bot's: its title, message, form and
// sign-in address, with relative addresses resolved against base (which
// may be nil).
func ParsePage(body string, base *url.URL) Page {
	p := Page{Body: body}
	if m := h1Re.FindStringSubmatch(body); m != nil {
		p.Title = text(m[1])
	}
	if m := pRe.FindStringSubmatch(body); m != nil {
		p.Message = text(m[1])
	}
	if m := formRe.FindStringSubmatch(body); m != nil {
		p.FormAction = resolve(base, html.UnescapeString(m[1]))
		p.Form = url.Values{}
		for _, f := range hiddenRe.FindAllStringSubmatch(body, -1) {
			p.Form.Add(html.UnescapeString(f[1]), html.UnescapeString(f[2]))
		}
		p.CanConfirm = strings.Contains(body, `name="action" value="confirm"`)
	}
	if m := signInRe.FindStringSubmatch(body); m != nil {
		p.SignInURL = html.UnescapeString(m[1])
	}
	return p
}

// text is the unescaped text of an HTML fragment, spaces folded.
func text(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(s, " "))), " ")
}

func resolve(base *url.URL, ref string) string {
	if base == nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return base.ResolveReference(r).String()
}
