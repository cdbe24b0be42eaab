package clusterrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/clusterrpc"
)

func TestCallRoundTripsWithCallerID(t *testing.T) {
	p := startPeer(t, peerConfig{})
	var protos []int
	var mu sync.Mutex
	obs := newRecObserver()
	c := newClient(t, "alice", nil, clusterrpc.WithObserver(obs), hook(func(next http.RoundTripper, r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil {
			mu.Lock()
			protos = append(protos, resp.ProtoMajor)
			mu.Unlock()
		}
		return resp, err
	}).option())
	got, err := c.Call(context.Background(), p.addr, "work", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "alice:hello" {
		t.Errorf("answer %q, want %q", got, "alice:hello")
	}
	// An empty body and an empty answer.
	got, err = c.Call(context.Background(), p.addr, "echo", nil)
	if err != nil || len(got) != 0 {
		t.Errorf("empty echo = %q, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, pm := range protos {
		if pm != 2 {
			t.Errorf("exchange %d over HTTP/%d, want HTTP/2", i, pm)
		}
	}
	if n := obs.calls("work/ok"); n != 1 {
		t.Errorf("Observer.Called(work, ok) %d times, want 1", n)
	}
	if got := <-p.obs.served; got != "_ping/ok" {
		t.Errorf("first served %q, want the ping that learns the incarnation", got)
	}
	if got := <-p.obs.served; got != "work/ok" {
		t.Errorf("served %q, want work/ok", got)
	}
}

func TestHandlerErrorsArriveAsRemoteErrors(t *testing.T) {
	p := startPeer(t, peerConfig{id: "bob", handles: map[string]clusterrpc.Handler{
		"coded": func(context.Context, string, []byte) ([]byte, error) {
			return nil, fmt.Errorf("wrapped: %w", clusterrpc.NewError("bad_input", "no such board"))
		},
		"plain": func(context.Context, string, []byte) ([]byte, error) {
			return nil, errors.New("disk on fire")
		},
		"refuse": func(context.Context, string, []byte) ([]byte, error) {
			return nil, clusterrpc.Refuse("not_owner", "account moved to carol")
		},
		"panic": func(context.Context, string, []byte) ([]byte, error) {
			panic("boom")
		},
		"huge": func(context.Context, string, []byte) ([]byte, error) {
			return make([]byte, 2048), nil
		},
	}, opts: []clusterrpc.Option{clusterrpc.WithMaxBody(1024)}})
	c := newClient(t, "alice", nil)
	for _, tc := range []struct {
		method, code, msg string
		retry             bool
	}{
		{"coded", "bad_input", "no such board", false},
		{"plain", clusterrpc.CodeInternal, "disk on fire", false},
		{"refuse", "not_owner", "account moved to carol", true},
		{"panic", clusterrpc.CodeInternal, "handler panicked", false},
		{"huge", clusterrpc.CodeAnswerTooLarge, "answer of 2048 bytes, over the limit of 1024", false},
	} {
		_, err := c.Call(context.Background(), p.addr, tc.method, nil)
		var re *clusterrpc.RemoteError
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v, want a *RemoteError", tc.method, err)
			continue
		}
		if re.Peer != "bob" || re.Code != tc.code || re.Message != tc.msg || re.Refused != tc.retry {
			t.Errorf("%s: %+v, want peer bob, code %q, message %q, refused %v", tc.method, *re, tc.code, tc.msg, tc.retry)
		}
		if clusterrpc.IsRetryable(err) != tc.retry || errors.Is(err, clusterrpc.ErrNotSent) != tc.retry {
			t.Errorf("%s: IsRetryable = %v, want %v", tc.method, clusterrpc.IsRetryable(err), tc.retry)
		}
		if errors.Is(err, clusterrpc.ErrOutcomeUnknown) {
			t.Errorf("%s: a handler's answer is not ErrOutcomeUnknown", tc.method)
		}
	}
	if !strings.Contains(p.log.String(), "handler panicked") {
		t.Errorf("the panic was not logged: %s", p.log)
	}
}

func TestUnknownMethodIsNotSent(t *testing.T) {
	p := startPeer(t, peerConfig{})
	c := newClient(t, "alice", nil)
	_, err := c.Call(context.Background(), p.addr, "nosuch", nil)
	if !isRefusal(err, clusterrpc.ReasonUnknownMethod) || !clusterrpc.IsRetryable(err) {
		t.Errorf("error %v, want a retryable unknown_method refusal", err)
	}
}

func TestForgedMACRefusedAndLogged(t *testing.T) {
	p := startPeer(t, peerConfig{})
	// A request that looks right but whose MAC was made up.
	r, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/pinbot-rpc/1/work", strings.NewReader("pin it"))
	r.Header.Set("Pinbot-From", "mallory")
	r.Header.Set("Pinbot-Time", fmt.Sprint(time.Now().UnixNano()))
	r.Header.Set("Pinbot-Nonce", "AAAAAAAAAAAAAAAAAAAAAA")
	r.Header.Set("Pinbot-Timeout", "0")
	r.Header.Set("Pinbot-Mac", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	resp, err := h2c(t).RoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Pinbot-Code") != clusterrpc.ReasonBadMAC {
		t.Errorf("status %d, code %q, want 401 bad_mac", resp.StatusCode, resp.Header.Get("Pinbot-Code"))
	}
	if resp.Header.Get("Pinbot-Mac") != "" {
		t.Error("a refusal of an unauthenticated request carries a MAC")
	}
	if p.ran.Load() != 0 {
		t.Error("the handler ran")
	}
	if n := p.obs.refusals(clusterrpc.ReasonBadMAC); n != 1 {
		t.Errorf("bad_mac refusals counted %d, want 1", n)
	}
	logged := p.log.String()
	for _, want := range []string{`"reason":"bad_mac"`, `"remote":"127.0.0.1:`, `"from":"mallory"`, `"method":"work"`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s: %s", want, logged)
		}
	}
}

func TestWrongKeyRefusedAndLogged(t *testing.T) {
	p := startPeer(t, peerConfig{})
	c, err := clusterrpc.NewClient(otherKey, "eve", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A call learns the server's incarnation first: that ping is refused,
	// so the call itself was never sent.
	_, err = c.Call(context.Background(), p.addr, "work", []byte("x"))
	if !clusterrpc.IsRetryable(err) {
		t.Errorf("call with a wrong key: %v, want ErrNotSent", err)
	}
	// The refusal of a request made with another key cannot be
	// authenticated by its sender.
	_, err = c.Ping(context.Background(), p.addr)
	if !errors.Is(err, clusterrpc.ErrBadAnswer) || !errors.Is(err, clusterrpc.ErrOutcomeUnknown) {
		t.Errorf("ping with a wrong key: %v, want ErrBadAnswer and ErrOutcomeUnknown", err)
	}
	if p.ran.Load() != 0 {
		t.Error("the handler ran")
	}
	if n := p.obs.refusals(clusterrpc.ReasonBadMAC); n != 2 {
		t.Errorf("bad_mac refusals counted %d, want 2", n)
	}
	if !strings.Contains(p.log.String(), `"from":"eve"`) {
		t.Errorf("refusal not logged: %s", p.log)
	}
}

func TestStaleTimestampRefused(t *testing.T) {
	p := startPeer(t, peerConfig{})
	clock := newSkewClock(0)
	c := newClient(t, "alice", clock)
	if _, err := c.Call(context.Background(), p.addr, "work", nil); err != nil {
		t.Fatal(err)
	}
	// The caller's clock falls a minute behind: past the 30 s window.
	clock.set(-time.Minute)
	_, err := c.Call(context.Background(), p.addr, "work", nil)
	if !isRefusal(err, clusterrpc.ReasonStale) {
		t.Fatalf("error %v, want a stale refusal", err)
	}
	// A copy of this request might have arrived in time, earlier: the
	// refusal proves nothing about it.
	if !errors.Is(err, clusterrpc.ErrOutcomeUnknown) || clusterrpc.IsRetryable(err) {
		t.Errorf("a stale refusal is %v, want ErrOutcomeUnknown", err)
	}
	if n := p.ran.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	if n := p.obs.refusals(clusterrpc.ReasonStale); n != 1 {
		t.Errorf("stale refusals counted %d, want 1", n)
	}
	if !strings.Contains(p.log.String(), `"reason":"stale"`) {
		t.Errorf("refusal not logged: %s", p.log)
	}
	// The refusal still measured the clocks: the server is a minute ahead.
	o := c.Offsets()["server"]
	if d := o.Offset - time.Minute; d < -o.RTT/2-time.Microsecond || d > o.RTT/2+time.Microsecond {
		t.Errorf("offset %v ± %v, want a minute", o.Offset, o.RTT/2)
	}
	// Its clock is in the future too.
	clock.set(time.Minute)
	if _, err := c.Call(context.Background(), p.addr, "work", nil); !isRefusal(err, clusterrpc.ReasonStale) {
		t.Errorf("a call from the future: %v, want a stale refusal", err)
	}
}

func TestReplayedRequestRefusedAndLogged(t *testing.T) {
	p := startPeer(t, peerConfig{})
	var (
		mu   sync.Mutex
		work captured
		next http.RoundTripper
	)
	c := newClient(t, "alice", nil, hook(func(rt http.RoundTripper, r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/work") {
			mu.Lock()
			work, next = capture(r), rt
			mu.Unlock()
		}
		return rt.RoundTrip(r)
	}).option())
	if _, err := c.Call(context.Background(), p.addr, "work", []byte("pin 1")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	resp, _, err := work.send(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Pinbot-Code") != clusterrpc.ReasonReplay {
		t.Errorf("replay answered %d %q, want 401 replay", resp.StatusCode, resp.Header.Get("Pinbot-Code"))
	}
	if n := p.ran.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	if n := p.obs.refusals(clusterrpc.ReasonReplay); n != 1 {
		t.Errorf("replay refusals counted %d, want 1", n)
	}
	logged := p.log.String()
	for _, want := range []string{`"reason":"replay"`, `"remote":"127.0.0.1:`, `"from":"alice"`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s: %s", want, logged)
		}
	}
}

// A request delivered twice (by a transport's retry, or by someone in
// between) runs once, and its caller is not told it may retry.
func TestDuplicateDeliveryRunsOnce(t *testing.T) {
	p := startPeer(t, peerConfig{})
	c := newClient(t, "alice", nil, hook(func(rt http.RoundTripper, r *http.Request) (*http.Response, error) {
		if !strings.HasSuffix(r.URL.Path, "/work") {
			return rt.RoundTrip(r)
		}
		first := capture(r)
		_, body, err := first.send(r.Context(), rt)
		if err != nil {
			return nil, err
		}
		if string(body) != "alice:x" {
			t.Errorf("first delivery answered %q", body)
		}
		return rt.RoundTrip(r)
	}).option())
	_, err := c.Call(context.Background(), p.addr, "work", []byte("x"))
	if !isRefusal(err, clusterrpc.ReasonReplay) || !errors.Is(err, clusterrpc.ErrOutcomeUnknown) || clusterrpc.IsRetryable(err) {
		t.Errorf("error %v, want a replay refusal, ErrOutcomeUnknown", err)
	}
	if n := p.ran.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

func TestTamperedAnswerRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(*http.Response)
	}{
		{"body", func(r *http.Response) { r.Body = io.NopCloser(strings.NewReader("alice:done")) }},
		{"outcome", func(r *http.Response) { r.Header.Set("Pinbot-Outcome", "refused") }},
		{"status", func(r *http.Response) { r.StatusCode = http.StatusNotFound }},
		{"clock", func(r *http.Response) { r.Header.Set("Pinbot-Recv", "1") }},
		{"no mac", func(r *http.Response) { r.Header.Del("Pinbot-Mac") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPeer(t, peerConfig{})
			c := newClient(t, "alice", nil, hook(func(rt http.RoundTripper, r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err == nil && strings.HasSuffix(r.URL.Path, "/work") {
					tc.tamper(resp)
				}
				return resp, err
			}).option())
			_, err := c.Call(context.Background(), p.addr, "work", []byte("x"))
			if !errors.Is(err, clusterrpc.ErrBadAnswer) || !errors.Is(err, clusterrpc.ErrOutcomeUnknown) || clusterrpc.IsRetryable(err) {
				t.Errorf("error %v, want ErrBadAnswer and ErrOutcomeUnknown", err)
			}
		})
	}
}

func TestPeerDownIsNotSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	obs := newRecObserver()
	c := newClient(t, "alice", nil, clusterrpc.WithObserver(obs))
	_, err = c.Call(context.Background(), addr, "work", nil)
	if !errors.Is(err, clusterrpc.ErrNotSent) || !clusterrpc.IsRetryable(err) {
		t.Errorf("error %v, want ErrNotSent", err)
	}
	_, err = c.Ping(context.Background(), addr)
	if !clusterrpc.IsRetryable(err) {
		t.Errorf("ping error %v, want ErrNotSent", err)
	}
	if n := obs.calls("work/" + clusterrpc.OutcomeNotSent); n != 1 {
		t.Errorf("Observer.Called(work, not_sent) %d times, want 1", n)
	}
	// A call whose context is over is not sent either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Call(ctx, addr, "work", nil); !clusterrpc.IsRetryable(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("call with a cancelled context: %v, want ErrNotSent and context.Canceled", err)
	}
}

func TestHandlerPastCallerDeadline(t *testing.T) {
	started, ended, release := make(chan struct{}), make(chan error, 1), make(chan struct{})
	p := startPeer(t, peerConfig{handles: map[string]clusterrpc.Handler{
		"hang": func(ctx context.Context, _ string, _ []byte) ([]byte, error) {
			close(started)
			<-ctx.Done()
			ended <- ctx.Err()
			// Answering at once could beat the caller's own timer.
			<-release
			return nil, ctx.Err()
		},
	}})
	c := newClient(t, "alice", nil)
	if _, err := c.Ping(context.Background(), p.addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, p.addr, "hang", nil)
	if !errors.Is(err, clusterrpc.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) || clusterrpc.IsRetryable(err) {
		t.Errorf("error %v, want ErrOutcomeUnknown and context.DeadlineExceeded", err)
	}
	close(release)
	<-started
	if err := <-ended; err == nil {
		t.Error("the handler's context ended without an error")
	}
}

func TestDeadlinePropagated(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	p := startPeer(t, peerConfig{
		opts: []clusterrpc.Option{clusterrpc.WithMaxTimeout(time.Hour)},
		handles: map[string]clusterrpc.Handler{
			"deadline": func(ctx context.Context, _ string, _ []byte) ([]byte, error) {
				dl, ok := ctx.Deadline()
				if !ok {
					return nil, errors.New("no deadline")
				}
				deadlines <- dl
				return nil, nil
			},
		}})
	c := newClient(t, "alice", nil)
	for _, tc := range []struct {
		name     string
		timeout  time.Duration // 0: none
		min, max time.Duration // of the handler's deadline from the call's start, give or take the call's time
	}{
		{"caller's", 10 * time.Second, 0, 10 * time.Second},
		{"server's longest", 0, 59 * time.Minute, time.Hour + time.Minute},
		{"caller's, over the server's longest", 2 * time.Hour, 59 * time.Minute, time.Hour + time.Minute},
	} {
		ctx := context.Background()
		start := time.Now()
		if tc.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.timeout)
			defer cancel()
		}
		if _, err := c.Call(ctx, p.addr, "deadline", nil); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The server counts the time left from the request's receipt,
		// before the call returned.
		took := time.Since(start)
		dl := (<-deadlines).Sub(start)
		if dl < tc.min || dl > tc.max+took {
			t.Errorf("%s: handler's deadline %v after the call's start, want %v to %v", tc.name, dl, tc.min, tc.max+took)
		}
	}
}

func TestAnswerAfterCallerGaveUp(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	p := startPeer(t, peerConfig{handles: map[string]clusterrpc.Handler{
		"slow": func(context.Context, string, []byte) ([]byte, error) {
			close(started)
			<-release // deaf to its context
			return []byte("late"), nil
		},
	}})
	c := newClient(t, "alice", nil)
	if _, err := c.Ping(context.Background(), p.addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, p.addr, "slow", nil)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, clusterrpc.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	close(release)
	for got := range p.obs.served {
		if strings.HasPrefix(got, "slow/") {
			break
		}
	}
	// The server and the connection are fine.
	if got, err := c.Call(context.Background(), p.addr, "work", []byte("after")); err != nil || string(got) != "alice:after" {
		t.Errorf("next call = %q, %v", got, err)
	}
}

func TestClockOffsetMeasured(t *testing.T) {
	p := startPeer(t, peerConfig{id: "fast", clock: newSkewClock(2 * time.Second)})
	q := startPeer(t, peerConfig{id: "true"})
	obs := newRecObserver()
	c := newClient(t, "alice", nil, clusterrpc.WithObserver(obs))
	before := time.Now()
	o, err := c.Ping(context.Background(), p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), q.addr, "work", nil); err != nil {
		t.Fatal(err)
	}
	// Both clocks read the same monotonic clock here: the measure is
	// within its error bound of the true offset.
	if d := o.Offset - 2*time.Second; d < -o.RTT/2-time.Microsecond || d > o.RTT/2+time.Microsecond {
		t.Errorf("offset %v, RTT %v: want 2s within RTT/2", o.Offset, o.RTT)
	}
	if o.Addr != p.addr || o.At.Before(before) {
		t.Errorf("offset %+v: wrong address or instant", o)
	}
	offsets := c.Offsets()
	if offsets["fast"] != o {
		t.Errorf("Offsets()[fast] = %+v, want %+v", offsets["fast"], o)
	}
	if tr := offsets["true"]; tr.Bound() > 100*time.Millisecond {
		t.Errorf("offset of an exact clock %+v", tr)
	}
	recent := clusterrpc.Recent(offsets, before)
	if ok, worst := clusterrpc.WithinSkew(recent, time.Second); ok || worst != "fast" {
		t.Errorf("WithinSkew(1s) = %v, %q, want false, fast", ok, worst)
	}
	if ok, worst := clusterrpc.WithinSkew(recent, 3*time.Second); !ok || worst != "fast" {
		t.Errorf("WithinSkew(3s) = %v, %q, want true, fast", ok, worst)
	}
	if got := clusterrpc.Recent(offsets, time.Now().Add(time.Hour)); len(got) != 0 {
		t.Errorf("Recent after every measure = %v", got)
	}
}

func TestConcurrentCallsShareOneConnection(t *testing.T) {
	p := startPeer(t, peerConfig{})
	c := newClient(t, "alice", nil)
	if _, err := c.Call(context.Background(), p.addr, "echo", nil); err != nil {
		t.Fatal(err)
	}
	const workers, calls = 16, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				body := fmt.Sprintf("%d/%d", w, i)
				got, err := c.Call(context.Background(), p.addr, "work", []byte(body))
				if err != nil || string(got) != "alice:"+body {
					t.Errorf("call %s = %q, %v", body, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := p.ran.Load(); n != workers*calls {
		t.Errorf("handler ran %d times, want %d", n, workers*calls)
	}
	if n := p.conns.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1", n)
	}
}

// A request bound to one server and delivered to another (someone in
// between reroutes it) is refused: it can run only where it was sent.
func TestRequestForAnotherServerRefused(t *testing.T) {
	a := startPeer(t, peerConfig{id: "a"})
	b := startPeer(t, peerConfig{id: "b"})
	var mu sync.Mutex
	reroute := false
	c := newClient(t, "alice", nil, hook(func(rt http.RoundTripper, r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if reroute {
			r.URL.Host = b.addr
		}
		return rt.RoundTrip(r)
	}).option())
	if _, err := c.Call(context.Background(), a.addr, "work", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	reroute = true
	mu.Unlock()
	_, err := c.Call(context.Background(), a.addr, "work", nil)
	if !isRefusal(err, clusterrpc.ReasonWrongIncarnation) || !errors.Is(err, clusterrpc.ErrOutcomeUnknown) {
		t.Errorf("rerouted call: %v, want a wrong_incarnation refusal, ErrOutcomeUnknown", err)
	}
	if a.ran.Load() != 1 || b.ran.Load() != 0 {
		t.Errorf("handlers ran a:%d b:%d, want 1 and 0", a.ran.Load(), b.ran.Load())
	}
	if b.obs.refusals(clusterrpc.ReasonWrongIncarnation) != 1 {
		t.Error("b did not count the refusal")
	}
}

func TestPeerRestartNeverRunsTwice(t *testing.T) {
	a := startPeer(t, peerConfig{id: "m1"})
	c := newClient(t, "alice", nil)
	if _, err := c.Call(context.Background(), a.addr, "work", nil); err != nil {
		t.Fatal(err)
	}
	a.kill(t)
	b := startPeer(t, peerConfig{id: "m1", addr: a.addr})
	defer c.Close() // before b stops: a server waits a while for open connections
	if a.srv.Incarnation() == b.srv.Incarnation() {
		t.Fatal("two servers share an incarnation")
	}
	// The client learns of the new server at once (it saw its connection
	// close), or its call fails: on the dead connection (the outcome is
	// unknown: the client cannot tell when the connection died), or at the
	// new server, bound to the old one (refused).
	_, err := c.Call(context.Background(), b.addr, "work", nil)
	if err != nil && !errors.Is(err, clusterrpc.ErrOutcomeUnknown) {
		t.Fatalf("first call after the restart: %v, want success or ErrOutcomeUnknown", err)
	}
	if _, err := c.Call(context.Background(), b.addr, "work", nil); err != nil {
		t.Fatalf("second call after the restart: %v", err)
	}
	if a.ran.Load() != 1 {
		t.Errorf("old server ran %d calls, want 1", a.ran.Load())
	}
}

func TestBodyLimits(t *testing.T) {
	p := startPeer(t, peerConfig{opts: []clusterrpc.Option{clusterrpc.WithMaxBody(1024)}})
	small := newClient(t, "alice", nil, clusterrpc.WithMaxBody(1024))
	if _, err := small.Call(context.Background(), p.addr, "echo", make([]byte, 1025)); !clusterrpc.IsRetryable(err) {
		t.Errorf("body over the client's limit: %v, want ErrNotSent", err)
	}
	if _, err := small.Call(context.Background(), p.addr, "echo", make([]byte, 1024)); err != nil {
		t.Errorf("body at the limit: %v", err)
	}
	// A server cannot authenticate its refusal of a body it did not read.
	big := newClient(t, "bob", nil)
	if _, err := big.Ping(context.Background(), p.addr); err != nil {
		t.Fatal(err)
	}
	_, err := big.Call(context.Background(), p.addr, "echo", make([]byte, 4096))
	if !errors.Is(err, clusterrpc.ErrOutcomeUnknown) {
		t.Errorf("body over the server's limit: %v, want ErrOutcomeUnknown", err)
	}
	if p.obs.refusals(clusterrpc.ReasonTooLarge) != 1 {
		t.Error("too_large refusal not counted")
	}
}

func TestConfiguration(t *testing.T) {
	if _, err := clusterrpc.NewServer(testKey[:31], "m", nil, zerolog.Nop()); err == nil {
		t.Error("NewServer accepted a 31-byte key")
	}
	if _, err := clusterrpc.NewClient(testKey, "two words", nil); err == nil {
		t.Error("NewClient accepted a member id with a space")
	}
	if _, err := clusterrpc.NewServer(testKey, "m", nil, zerolog.Nop(), clusterrpc.WithReplayLimit(0)); err == nil {
		t.Error("NewServer accepted a replay limit of 0")
	}
	s, err := clusterrpc.NewServer(testKey, "m", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, string, []byte) ([]byte, error) { return nil, nil }
	for _, bad := range []string{"", "_ping", "a/b", "a b", strings.Repeat("x", 65)} {
		if err := s.Handle(bad, h); err == nil {
			t.Errorf("Handle(%q) accepted", bad)
		}
	}
	must(t, s.Handle("ok", h))
	if err := s.Handle("ok", h); err == nil {
		t.Error("Handle accepted a method twice")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	// Serve marks the server serving before it accepts: a call answered
	// proves Handle's refusal below is not a race.
	c := newClient(t, "alice", nil)
	if _, err := c.Call(context.Background(), l.Addr().String(), "ok", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Handle("late", h); err == nil {
		t.Error("Handle accepted a method after Serve")
	}
	c.Close()
	must(t, s.Shutdown(context.Background()))
	if err := <-done; err != nil {
		t.Errorf("Serve after Shutdown: %v", err)
	}
}
