package clusterrpc

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Client makes calls to the members of a cluster; see the package
// documentation. It keeps one HTTP/2 connection per peer address, the
// incarnation of the server last heard at each, and each peer's latest
// clock offset. A Client is safe for simultaneous use.
type Client struct {
	key    []byte
	self   string
	clock  Clock
	opts   options
	log    zerolog.Logger
	scheme string
	tr     *http.Transport
	rt     http.RoundTripper
	// epoch changes whenever a connection is dialed or closed: an
	// incarnation learned in another epoch may belong to a server since
	// replaced, and is checked with a ping before a call is bound to it.
	epoch atomic.Uint64

	mu      sync.Mutex
	peers   map[string]peerState // by address
	offsets map[string]Offset    // by member id
}

// peerState is what a Client knows of the server at an address.
type peerState struct {
	incarnation string
	epoch       uint64
}

// NewClient returns a Client for member self, authenticating calls with
// key (at least MinKeySize bytes, shared by every member) and stamping
// them with clock (nil: SystemClock).
func NewClient(key []byte, self string, clock Clock, opts ...Option) (*Client, error) {
	if err := checkCommon(key, self); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	if o.maxBody < 1 {
		return nil, errors.New("clusterrpc: WithMaxBody: not positive")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	c := &Client{
		key:     macKey(key),
		self:    self,
		clock:   clock,
		opts:    o,
		log:     zerolog.Nop(),
		scheme:  "http",
		peers:   make(map[string]peerState),
		offsets: make(map[string]Offset),
	}
	if o.log != nil {
		c.log = o.log.With().Str("component", "clusterrpc").Str("member", self).Logger()
	}
	protocols := new(http.Protocols)
	if o.tls != nil {
		c.scheme = "https"
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	dialer := &net.Dialer{Timeout: DialTimeout}
	c.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			c.epoch.Add(1)
			return &trackedConn{Conn: conn, closed: func() { c.epoch.Add(1) }}, nil
		},
		Protocols:              protocols,
		TLSHandshakeTimeout:    DialTimeout,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		// Shorter than the server's IdleTimeout: the client closes an
		// idle connection first, never the server under a call.
		IdleConnTimeout:    IdleTimeout / 2,
		DisableCompression: true,
		HTTP2: &http.HTTP2Config{
			// Wait for a free stream rather than open a second
			// connection to the same peer.
			StrictMaxConcurrentRequests: true,
			SendPingTimeout:             PingInterval,
			PingTimeout:                 PingTimeout,
		},
	}
	if o.tls != nil {
		c.tr.TLSClientConfig = o.tls.Clone()
	}
	c.rt = c.tr
	if o.wrap != nil {
		c.rt = o.wrap(c.tr)
	}
	return c, nil
}

// trackedConn calls closed once, when it is closed.
type trackedConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}

// Close closes the Client's idle connections. Calls in progress go on.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Call calls method at the member at addr (host:port) with body and
// returns its answer. Its error is a *RemoteError when the handler
// returned one; otherwise it wraps ErrNotSent or ErrOutcomeUnknown (see
// IsRetryable). ctx's deadline is the handler's too.
//
// The first call to an address, or the first after a connection was
// opened or closed, pings the peer first to learn which server listens
// there, and binds the call to it.
func (c *Client) Call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	start := c.clock.Now()
	out, err := c.call(ctx, addr, method, body)
	c.opts.observer.Called(method, outcomeOfErr(err), c.clock.Now().Sub(start))
	return out, err
}

// outcomeOfErr maps a Call's error to the Observer's outcome.
func outcomeOfErr(err error) string {
	var re *RemoteError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.As(err, &re) && !re.Refused:
		return OutcomeError
	case errors.Is(err, ErrOutcomeUnknown):
		return OutcomeUnknown
	case errors.As(err, &re):
		return OutcomeRefused
	}
	var rf *RefusalError
	if errors.As(err, &rf) {
		return OutcomeRefused
	}
	return OutcomeNotSent
}

func (c *Client) call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	if !methodRE.MatchString(method) {
		return nil, c.fail(ErrNotSent, method, addr, errors.New("invalid method name"))
	}
	if len(body) > c.opts.maxBody {
		return nil, c.fail(ErrNotSent, method, addr, fmt.Errorf("body of %d bytes, over the limit of %d", len(body), c.opts.maxBody))
	}
	inc, ok := c.incarnation(addr)
	if !ok {
		a, _, err := c.exchange(ctx, addr, pingMethod, "", nil)
		if err == nil && a.status != http.StatusOK {
			err = &RefusalError{Peer: a.from, Reason: a.code}
		}
		if err != nil {
			// The ping's outcome does not matter: the call was not sent.
			if cerr := ctx.Err(); cerr != nil {
				return nil, fmt.Errorf("clusterrpc: %s at %s: %w: pinging it first: %v: %w", method, addr, ErrNotSent, err, cerr)
			}
			return nil, fmt.Errorf("clusterrpc: %s at %s: %w: pinging it first: %v", method, addr, ErrNotSent, err)
		}
		inc = a.incarnation
	}
	a, _, err := c.exchange(ctx, addr, method, inc, body)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("clusterrpc: %s at %s: %w", method, addr, &RefusalError{Peer: a.from, Reason: a.code})
	}
	switch a.outcome {
	case wireOK:
		return a.body, nil
	case wireError, wireRefused:
		return nil, &RemoteError{Peer: a.from, Code: a.code, Message: string(a.body), Refused: a.outcome == wireRefused}
	}
	return nil, fmt.Errorf("clusterrpc: %s at %s: %w: unknown outcome %q", method, addr, ErrOutcomeUnknown, a.outcome)
}

// Ping measures the clock offset of the member at addr and returns it;
// Offsets keeps it too. A peer that refuses the ping (its clock too far
// from this member's: ReasonStale) still answers with its clock: Ping
// then returns the measure and the *RefusalError.
func (c *Client) Ping(ctx context.Context, addr string) (Offset, error) {
	start := c.clock.Now()
	// A ping is answered by any server: it learns which one is there.
	a, o, err := c.exchange(ctx, addr, pingMethod, "", nil)
	if err == nil && a.status != http.StatusOK {
		err = fmt.Errorf("clusterrpc: ping at %s: %w", addr, &RefusalError{Peer: a.from, Reason: a.code})
	}
	c.opts.observer.Called(pingMethod, outcomeOfErr(err), c.clock.Now().Sub(start))
	return o, err
}

// Offsets returns the latest clock offset measured of each peer, by
// member id: every authenticated answer carries one.
func (c *Client) Offsets() map[string]Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.offsets)
}

// incarnation returns the incarnation of the server at addr, when it was
// learned in the current epoch.
func (c *Client) incarnation(addr string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.peers[addr]
	if !ok || p.epoch != c.epoch.Load() {
		return "", false
	}
	return p.incarnation, true
}

// learn keeps what an authenticated answer from addr said.
func (c *Client) learn(addr, peer, incarnation string, o Offset) {
	c.mu.Lock()
	c.peers[addr] = peerState{incarnation: incarnation, epoch: c.epoch.Load()}
	c.offsets[peer] = o
	c.mu.Unlock()
	c.opts.observer.Measured(peer, o)
}

// forget drops what is known of the server at addr.
func (c *Client) forget(addr string) {
	c.mu.Lock()
	delete(c.peers, addr)
	c.mu.Unlock()
}

// fail returns an error of the given kind (ErrNotSent or
// ErrOutcomeUnknown) for a call of method at addr, wrapping cause.
func (c *Client) fail(kind error, method, addr string, cause error) error {
	return fmt.Errorf("clusterrpc: %s at %s: %w: %w", method, addr, kind, cause)
}

// exchange sends one request for the server incarnation to and returns
// its authenticated answer and the offset measured with it. Its errors
// wrap ErrNotSent or ErrOutcomeUnknown.
func (c *Client) exchange(ctx context.Context, addr, method, to string, body []byte) (*answer, Offset, error) {
	if err := ctx.Err(); err != nil {
		return nil, Offset{}, c.fail(ErrNotSent, method, addr, err)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, Offset{}, c.fail(ErrNotSent, method, addr, err)
	}
	var timeout int64
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left < time.Microsecond {
			return nil, Offset{}, c.fail(ErrNotSent, method, addr, context.DeadlineExceeded)
		}
		timeout = left.Microseconds()
	}
	var nonce [nonceSize]byte
	_, _ = rand.Read(nonce[:]) // never fails: crypto/rand crashes the program instead
	t0 := c.clock.Now()
	req := request{method: method, from: c.self, to: to, time: t0.UnixNano(), nonce: nonce[:], timeout: timeout, body: body}
	mac := req.mac(c.key)

	// Until the transport has a connection for the request, nothing of
	// it was written: a failure before then is ErrNotSent.
	var gotConn atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	})
	u := url.URL{Scheme: c.scheme, Host: addr, Path: pathPrefix + method}
	hr, err := http.NewRequestWithContext(tctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, Offset{}, c.fail(ErrNotSent, method, addr, err)
	}
	h := hr.Header
	h.Set(hFrom, req.from)
	if to != "" {
		h.Set(hTo, to)
	}
	h.Set(hTime, strconv.FormatInt(req.time, 10))
	h.Set(hNonce, b64.EncodeToString(req.nonce))
	h.Set(hTimeout, strconv.FormatInt(timeout, 10))
	h.Set(hMAC, b64.EncodeToString(mac))
	h.Set("Content-Type", "application/octet-stream")

	resp, err := c.rt.RoundTrip(hr)
	if err != nil {
		if !gotConn.Load() {
			return nil, Offset{}, c.fail(ErrNotSent, method, addr, err)
		}
		c.forget(addr)
		return nil, Offset{}, c.fail(ErrOutcomeUnknown, method, addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.maxBody)+1))
	t3 := c.clock.Now()
	if err != nil {
		c.forget(addr)
		return nil, Offset{}, c.fail(ErrOutcomeUnknown, method, addr, fmt.Errorf("reading the answer: %w", err))
	}
	if len(data) > c.opts.maxBody {
		return nil, Offset{}, c.fail(ErrOutcomeUnknown, method, addr, fmt.Errorf("answer over the limit of %d bytes", c.opts.maxBody))
	}
	a, err := c.verify(resp, data, mac)
	if err != nil {
		c.forget(addr)
		c.log.Warn().Str("addr", addr).Str("method", method).Err(err).Msg("answer failed authentication")
		return nil, Offset{}, fmt.Errorf("clusterrpc: %s at %s: %w: %w: %v", method, addr, ErrOutcomeUnknown, ErrBadAnswer, err)
	}
	off, rtt := measure(t0, t3, a.recv, a.send)
	o := Offset{Addr: addr, Offset: off, RTT: rtt, At: t3}
	c.learn(addr, a.from, a.incarnation, o)
	return a, o, nil
}

// verify reads the answer in resp, whose body is data, and checks its MAC
// against the request's, reqMAC.
func (c *Client) verify(resp *http.Response, data, reqMAC []byte) (*answer, error) {
	h := resp.Header
	a := &answer{
		status:      resp.StatusCode,
		from:        h.Get(hFrom),
		incarnation: h.Get(hIncarnation),
		outcome:     h.Get(hOutcome),
		code:        h.Get(hCode),
		body:        data,
	}
	var errs [3]error
	var mac []byte
	a.recv, errs[0] = parseInt(h.Get(hRecv))
	a.send, errs[1] = parseInt(h.Get(hSend))
	mac, errs[2] = parseB64(h.Get(hMAC), 32)
	switch {
	case errors.Join(errs[:]...) != nil:
		return nil, fmt.Errorf("status %d, outcome %q, code %q, without a MAC", a.status, a.outcome, a.code)
	case !hmac.Equal(a.mac(c.key, reqMAC), mac):
		return nil, fmt.Errorf("status %d, outcome %q, code %q, with a wrong MAC", a.status, a.outcome, a.code)
	case !validID(a.from) || a.incarnation == "":
		return nil, fmt.Errorf("status %d: no member id or incarnation", a.status)
	}
	return a, nil
}
