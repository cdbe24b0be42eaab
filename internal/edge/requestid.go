package edge

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/netip"

	"github.com/pinbot/pinbot/internal/logctx"
)

// RequestIDHeader carries a request's ID: read from a trusted proxy, and
// sent back on every answer.
const RequestIDHeader = "X-Request-ID"

// maxRequestIDLen bounds an ID taken from a proxy; a longer one is
// replaced by a new one.
const maxRequestIDLen = 64

// RequestIDs returns next with every request given an ID, carried in the
// request's context for its log lines (package logctx) and sent back in
// the answer's X-Request-ID header. The ID is the X-Request-ID header
// when the request comes straight from one of the trusted proxies and the
// header is a short run of letters, digits and "-_.:" (nothing that could
// forge or break a log line); otherwise a new random one. Wrap it around
// everything else, so that even a refusal by the Limiter has an ID.
func RequestIDs(next http.Handler, trustedProxies []netip.Prefix) http.Handler {
	proxies := make([]netip.Prefix, len(trustedProxies))
	for i, p := range trustedProxies {
		proxies[i] = p.Masked()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ""
		if addr, ok := parseAddr(r.RemoteAddr); ok && contains(proxies, addr) {
			if v := r.Header.Get(RequestIDHeader); validRequestID(v) {
				id = v
			}
		}
		if id == "" {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(logctx.With(r.Context(), logctx.RequestID, id)))
	})
}

// validRequestID reports whether v may be used as a request's ID.
func validRequestID(v string) bool {
	if v == "" || len(v) > maxRequestIDLen {
		return false
	}
	for _, c := range []byte(v) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// newRequestID returns 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// contains reports whether a is in one of the prefixes.
func contains(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
