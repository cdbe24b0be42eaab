package edge

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/pinbot/pinbot/internal/logctx"
)

// TestRequestIDs: a request gets a new ID unless it comes straight from a
// trusted proxy with a usable X-Request-ID; the handler's context carries
// the ID the answer names.
func TestRequestIDs(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	var inCtx string
	h := RequestIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inCtx = logctx.Value(r.Context(), logctx.RequestID)
	}), proxies)
	for i, c := range []struct {
		remote, header string
		kept           bool
	}{
		{"10.1.2.3:5000", "abc-123", true},
		{"10.1.2.3:5000", "", false},
		{"10.1.2.3:5000", "a b", false},
		{"10.1.2.3:5000", "x\n{\"level\":\"error\"}", false},
		{"192.0.2.7:5000", "abc-123", false}, // not a proxy: may not choose its ID
		{"garbage", "abc-123", false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.RemoteAddr = c.remote
		if c.header != "" {
			req.Header.Set(RequestIDHeader, c.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(RequestIDHeader)
		if got == "" || got != inCtx {
			t.Errorf("case %d: header %q, context %q", i, got, inCtx)
		}
		if (got == c.header) != c.kept {
			t.Errorf("case %d: from %s with %q: ID %q, kept %v want %v", i, c.remote, c.header, got, got == c.header, c.kept)
		}
	}
	seen := map[string]bool{}
	for range 100 {
		id := newRequestID()
		if len(id) != 16 || seen[id] || !validRequestID(id) {
			t.Fatalf("new ID %q (repeated: %v)", id, seen[id])
		}
		seen[id] = true
	}
}
