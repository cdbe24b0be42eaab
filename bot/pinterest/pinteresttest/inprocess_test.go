package pinteresttest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestInProcess: the in-process client reaches the same endpoints, with
// the same answers and faults, as a client over the loopback; a request
// held until its client gives up fails with the context's error.
func TestInProcess(t *testing.T) {
	s := pinteresttest.NewServer()
	defer s.Close()
	cred := s.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1", Name: "One"})
	get := func(hc *http.Client, ctx context.Context) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIBase()+"/boards", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cred.Token().AccessToken)
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		return res.StatusCode, nil
	}
	for _, hc := range []*http.Client{s.Client(), s.InProcess()} {
		if code, err := get(hc, context.Background()); err != nil || code != http.StatusOK {
			t.Fatalf("GET /boards: %d, %v; want 200", code, err)
		}
		s.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Status: http.StatusServiceUnavailable})
		if code, err := get(hc, context.Background()); err != nil || code != http.StatusServiceUnavailable {
			t.Fatalf("GET /boards under a fault: %d, %v; want 503", code, err)
		}
	}
	s.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Until: make(chan struct{})})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := get(s.InProcess(), ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held request: %v, want the context's deadline", err)
	}
}
