package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// ErrNotServing means no pinbot answers on the control socket: none runs
// on the data directory, or it runs without the socket.
var ErrNotServing = errors.New("backup: no pinbot answers on the control socket")

// Fetch asks the pinbot serving the control socket at path for a backup,
// and copies it to w as it comes; it returns the bytes copied. Nobody
// answering there fails with an error wrapping ErrNotServing, before
// anything is written to w. The copy is not checked: Verify it.
func Fetch(ctx context.Context, path string, w io.Writer) (int64, error) {
	resp, err := Get(ctx, path, BackupPath)
	if err != nil {
		if errors.Is(err, ErrNotServing) {
			return 0, err
		}
		return 0, fmt.Errorf("backup: asking the running pinbot: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, fmt.Errorf("backup: the running pinbot answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("backup: receiving the backup: %w", err)
	}
	if e := resp.Trailer.Get(errorTrailer); e != "" {
		return n, fmt.Errorf("backup: the running pinbot failed: %s", e)
	}
	return n, nil
}

// Get sends a GET request for target (a path, with its query) to the
// pinbot serving the control socket at path, and returns its answer,
// whose body the caller closes. Nobody answering there fails with an
// error wrapping ErrNotServing; other errors are the request's.
func Get(ctx context.Context, path, target string) (*http.Response, error) {
	var dialed atomic.Bool
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			dialed.Store(true)
			return c, nil
		},
		DisableKeepAlives: true,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://pinbot"+target, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		tr.CloseIdleConnections()
		if !dialed.Load() && ctx.Err() == nil {
			return nil, fmt.Errorf("%w (%s): %w", ErrNotServing, path, err)
		}
		return nil, err
	}
	return resp, nil
}
