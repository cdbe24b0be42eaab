package clusterrpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/clusterrpc"
	"github.com/pinbot/pinbot/internal/logtest"
)

var (
	testKey  = []byte("0123456789abcdef0123456789abcdef")
	otherKey = []byte("fedcba9876543210fedcba9876543210")
)

// skewClock is the system clock moved by an offset that tests may change.
type skewClock struct{ off atomic.Int64 }

func newSkewClock(off time.Duration) *skewClock {
	c := &skewClock{}
	c.off.Store(int64(off))
	return c
}

func (c *skewClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

func (c *skewClock) set(off time.Duration) { c.off.Store(int64(off)) }

// recObserver records what a Server or Client reports.
type recObserver struct {
	mu      sync.Mutex
	refused map[string]int
	called  map[string]int // method/outcome
	served  chan string    // method/outcome of each request served
}

func newRecObserver() *recObserver {
	return &recObserver{refused: map[string]int{}, called: map[string]int{}, served: make(chan string, 10_000)}
}

func (o *recObserver) Called(method, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.called[method+"/"+outcome]++
}

func (o *recObserver) Served(method, outcome string, _ time.Duration) {
	select {
	case o.served <- method + "/" + outcome:
	default:
	}
}

func (o *recObserver) Refused(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused[reason]++
}

func (o *recObserver) Measured(string, clusterrpc.Offset) {}

func (o *recObserver) refusals(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused[reason]
}

func (o *recObserver) calls(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.called[key]
}

// peer is a Server on loopback with what a test reads of it.
type peer struct {
	srv  *clusterrpc.Server
	addr string
	log  *logtest.Buffer
	obs  *recObserver
	// ran counts the runs of the "work" handler.
	ran atomic.Int64
	// conns counts the connections accepted.
	conns atomic.Int64

	done     chan error
	stopOnce sync.Once
}

type peerConfig struct {
	id      string
	clock   clusterrpc.Clock
	opts    []clusterrpc.Option
	addr    string // default 127.0.0.1:0
	handles map[string]clusterrpc.Handler
}

// startPeer serves a Server with a "work" handler (answering from+":"+body
// and counting its runs), an "echo" handler and cfg.handles, until the
// test ends.
func startPeer(t testing.TB, cfg peerConfig) *peer {
	t.Helper()
	if cfg.id == "" {
		cfg.id = "server"
	}
	if cfg.addr == "" {
		cfg.addr = "127.0.0.1:0"
	}
	p := &peer{log: &logtest.Buffer{}, obs: newRecObserver()}
	opts := append([]clusterrpc.Option{clusterrpc.WithObserver(p.obs)}, cfg.opts...)
	srv, err := clusterrpc.NewServer(testKey, cfg.id, cfg.clock, zerolog.New(p.log), opts...)
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	must(t, srv.Handle("work", func(_ context.Context, from string, body []byte) ([]byte, error) {
		p.ran.Add(1)
		return append([]byte(from+":"), body...), nil
	}))
	must(t, srv.Handle("echo", func(_ context.Context, _ string, body []byte) ([]byte, error) {
		return body, nil
	}))
	for m, h := range cfg.handles {
		must(t, srv.Handle(m, h))
	}
	l, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	p.done = make(chan error, 1)
	go func() { p.done <- srv.Serve(countingListener{l, &p.conns}) }()
	// Closed at once: a graceful stop waits a while for the connections
	// clients keep open.
	t.Cleanup(func() { p.kill(t) })
	return p
}

// kill closes p's connections at once, as a crash would.
func (p *peer) kill(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.shutdown(t, ctx)
}

func (p *peer) shutdown(t testing.TB, ctx context.Context) {
	t.Helper()
	p.stopOnce.Do(func() {
		if err := p.srv.Shutdown(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-p.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newClient(t testing.TB, id string, clock clusterrpc.Clock, opts ...clusterrpc.Option) *clusterrpc.Client {
	t.Helper()
	c, err := clusterrpc.NewClient(testKey, id, clock, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// hook is a transport that lets a test see and change each request.
type hook func(next http.RoundTripper, r *http.Request) (*http.Response, error)

func (h hook) option() clusterrpc.Option {
	return clusterrpc.WrapTransport(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) { return h(next, r) })
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// captured is a request's bytes, taken on its way out.
type captured struct {
	url    string
	header http.Header
	body   []byte
}

// capture reads r's body and puts it back.
func capture(r *http.Request) captured {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return captured{url: r.URL.String(), header: r.Header.Clone(), body: body}
}

// send sends the captured bytes again through rt.
func (c captured) send(ctx context.Context, rt http.RoundTripper) (*http.Response, []byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, nil, err
	}
	r.Header = c.header.Clone()
	resp, err := rt.RoundTrip(r)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// h2c returns a plain HTTP/2 transport, for requests made by hand.
func h2c(t testing.TB) *http.Transport {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func isRefusal(err error, reason string) bool {
	var rf *clusterrpc.RefusalError
	return errors.As(err, &rf) && rf.Reason == reason
}
