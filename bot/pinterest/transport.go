package pinterest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/logctx"
)

// ridHeader is the header in which Pinterest returns its request id.
const ridHeader = "X-Pinterest-Rid"

// logTransport logs each exchange at debug level: method, URL path (no
// query, no headers), status, x-pinterest-rid and elapsed time. It never
// reads request or response bodies, so tokens in form bodies and JSON
// answers stay out of the log.
//
// The elapsed time is read from the wall clock: it is only reported, never
// used in a decision.
type logTransport struct {
	base http.RoundTripper
	log  zerolog.Logger
}

func (t *logTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.log.GetLevel() > zerolog.DebugLevel {
		// Not logged: spare tagging a logger on every request.
		return t.base.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	elapsed := time.Since(start)
	if err != nil {
		logctx.Logger(req.Context(), t.log).Debug().Str("method", req.Method).Str("path", req.URL.Path).
			Dur("elapsed", elapsed).Err(err).Msg("pinterest request failed")
		return nil, err
	}
	logctx.Logger(req.Context(), t.log).Debug().Str("method", req.Method).Str("path", req.URL.Path).
		Int("status", resp.StatusCode).Str("rid", resp.Header.Get(ridHeader)).
		Dur("elapsed", elapsed).Msg("pinterest response")
	return resp, nil
}

// wrapHTTPClient returns a copy of hc whose transport logs through log.
func wrapHTTPClient(hc *http.Client, log zerolog.Logger) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := *hc
	out.Transport = &logTransport{base: base, log: log}
	return &out
}

// errBodyTooLarge is returned when a response body exceeds the cap.
var errBodyTooLarge = errors.New("pinterest: response body too large")

// readCapped reads all of r, failing when it holds more than max bytes.
func readCapped(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: over %d bytes", errBodyTooLarge, max)
	}
	return b, nil
}
