package dashboard

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// Paths the Dashboard serves.
const (
	// Path is the dashboard itself: HTML rendered on the server, for a
	// request carrying the token.
	Path = "/admin"
	// LoginPath is the page a browser opens: it asks for the token, keeps
	// it in the tab's sessionStorage and fetches Path with it.
	LoginPath = "/admin/login"
	// DataPath is the same data as JSON, for a request carrying the token.
	DataPath = "/admin/data.json"
	// StaticPrefix serves the embedded stylesheet, script and icon.
	StaticPrefix = "/admin/static/"
)

// Headers of every answer under /admin: nothing is cached, framed, sent
// as a referrer or loaded from elsewhere, and no inline script or style
// runs.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
	"X-Frame-Options":              "DENY",
	"Cache-Control":                "no-store",
	"Referrer-Policy":              "no-referrer",
	"X-Content-Type-Options":       "nosniff",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
}

//go:embed static
var staticFiles embed.FS

// static holds the files of the static directory, by name.
var static = func() map[string][]byte {
	m := map[string][]byte{}
	err := fs.WalkDir(staticFiles, "static", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := staticFiles.ReadFile(p)
		m[path.Base(p)] = b
		return err
	})
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return m
}()

var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

// Mount returns a handler that serves the dashboard's paths (Path and
// everything under it) with d and every other path with next.
func (d *Dashboard) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Owns(r.URL.Path) {
			d.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Owns reports whether p is one of the dashboard's paths.
func Owns(p string) bool { return p == Path || strings.HasPrefix(p, Path+"/") }

// ServeHTTP serves GET and HEAD requests for the dashboard's paths;
// other methods get 405, other paths under /admin 404.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	p := r.URL.Path
	name, isStatic := strings.CutPrefix(p, StaticPrefix)
	known := p == Path || p == LoginPath || p == DataPath || (isStatic && static[name] != nil)
	if !known {
		d.writeMessage(w, http.StatusNotFound, "Not found", "There is nothing here.")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		d.writeMessage(w, http.StatusMethodNotAllowed, "Method not allowed", "This address only answers GET requests.")
		return
	}
	switch {
	case isStatic:
		ext := path.Ext(name)
		w.Header().Set("Content-Type", contentTypes[ext])
		write(w, http.StatusOK, static[name])
	case p == LoginPath:
		d.writeHTML(w, http.StatusOK, "login", nil)
	case !d.authorized(r):
		d.refuse(w, r)
	case p == DataPath:
		body, err := json.MarshalIndent(d.Data(r.Context()), "", "  ")
		if err != nil {
			logctx.Logger(r.Context(), d.log).Error().Err(err).Msg("encoding the dashboard's data failed")
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		write(w, http.StatusOK, append(body, '\n'))
	default:
		d.writeHTML(w, http.StatusOK, "admin", newView(d.Data(r.Context())))
	}
}

// authorized reports whether r carries the token as a Bearer credential.
// Both sides are hashed first, so that the comparison takes the same time
// whatever the lengths and contents (subtle.ConstantTimeCompare returns at
// once on a length mismatch).
func (d *Dashboard) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], d.tokenSum[:]) == 1
}

// refuse answers 401 with the Bearer challenge (RFC 6750): with
// error="invalid_token" when a Bearer token was given.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer realm="pinbot admin"`
	if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Bearer") {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	if r.URL.Path == DataPath {
		w.Header().Set("Content-Type", "application/json")
		write(w, http.StatusUnauthorized, []byte(`{"error":"unauthorized"}`+"\n"))
		return
	}
	d.writeMessage(w, http.StatusUnauthorized, "Sign in",
		"The dashboard needs the admin token. Open the sign-in page, or send it as an Authorization: Bearer header.")
}

// message is the data of the message page.
type message struct {
	Title, Text string
	Login       bool // link the sign-in page
}

func (d *Dashboard) writeMessage(w http.ResponseWriter, status int, title, text string) {
	d.writeHTML(w, status, "message", message{Title: title, Text: text, Login: status == http.StatusUnauthorized})
}

// writeHTML renders the template name with v.
func (d *Dashboard) writeHTML(w http.ResponseWriter, status int, name string, v any) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, v); err != nil {
		d.log.Error().Err(err).Str("template", name).Msg("rendering the dashboard failed")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	write(w, status, buf.Bytes())
}

func write(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
