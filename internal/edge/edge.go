package edge

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Defaults applied by New to zero fields of Config.
var (
	// DefaultRate is 20 requests a minute per client, 20 at once: a
	// person linking an account makes a handful, a health checker one
	// every few seconds.
	DefaultRate = gcra.Rate{Limit: 20, Period: time.Minute}
	// DefaultOperatorRate is 120 requests a minute per client, 120 at
	// once, for the operator's routes (see Config.Operator): a
	// Prometheus scrape, liveness and readiness probes and an open
	// dashboard from one address take a few dozen a minute together.
	DefaultOperatorRate = gcra.Rate{Limit: 120, Period: time.Minute}
)

// DefaultMaxClients bounds the clients remembered at once (about 100
// bytes each); beyond it the least recently seen one is forgotten.
const DefaultMaxClients = 100_000

// Why a request was refused: the reasons Config.Refused is given.
const (
	// RefusedRate: the client used up Config.Rate (the public routes).
	RefusedRate = "http_rate"
	// RefusedOperatorRate: the client used up Config.OperatorRate (the
	// operator's routes).
	RefusedOperatorRate = "operator_rate"
)

// Config configures a Limiter. The zero value of every field selects a
// default.
type Config struct {
	// Rate is each client's rate; default DefaultRate.
	Rate gcra.Rate
	// Operator, when not nil, picks the requests to the operator's
	// routes (health checks, metrics, dashboard): they count against
	// OperatorRate, kept per client apart from Rate, so that probes and
	// scrapes never use up the allowance of the public pages, nor a
	// burst on those pages fail a health check. NoOperatorLimit lets
	// them through unlimited.
	Operator        func(*http.Request) bool
	OperatorRate    gcra.Rate
	NoOperatorLimit bool
	// TrustedProxies are the addresses of the reverse proxies in front
	// of pinbot, whose X-Forwarded-For is believed; default none, so the
	// header is ignored.
	TrustedProxies []netip.Prefix
	// MaxClients bounds the clients remembered; default
	// DefaultMaxClients.
	MaxClients int
	// Now is the clock; default time.Now. The rates run on the time
	// between its readings as Time.Sub measures it, which for time.Now's
	// readings is Go's monotonic clock: the wall clock set back never
	// locks clients out (nor the health probes), and set forward never
	// lets them through early.
	Now func() time.Time
	// Elapsed, when not nil, is the clock the rates run on instead:
	// monotonic time, elapsed since an origin fixed for the Limiter's
	// life. Default gcra.Since(Now). Tests set it beside a Now whose
	// readings carry no monotonic time.
	Elapsed func() time.Duration
	// Refused, when not nil, is told of every request refused with 429,
	// with the reason: RefusedRate or RefusedOperatorRate (for metrics:
	// metrics.Metrics.HTTPRefused). It runs on the request's goroutine:
	// it must be cheap and must not block.
	Refused func(reason string)
	// Log receives a debug line per refused request, tagged
	// component=edge.
	Log zerolog.Logger
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	if !c.Rate.IsZero() {
		if err := c.Rate.Validate(); err != nil {
			return fmt.Errorf("edge: Config.Rate: %w", err)
		}
	}
	if !c.OperatorRate.IsZero() {
		if err := c.OperatorRate.Validate(); err != nil {
			return fmt.Errorf("edge: Config.OperatorRate: %w", err)
		}
	}
	if c.MaxClients < 0 {
		return errors.New("edge: Config.MaxClients is negative")
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return errors.New("edge: Config.TrustedProxies holds an invalid prefix")
		}
	}
	return nil
}

// Limiter limits each client's requests; see the package documentation.
// A Limiter is safe for simultaneous use by multiple goroutines.
type Limiter struct {
	lim *gcra.Limiter
	// op limits the operator's routes (nil: unlimited); operator picks
	// them (nil: none).
	op       *gcra.Limiter
	operator func(*http.Request) bool
	proxies  []netip.Prefix
	elapsed  func() time.Duration
	refused  func(reason string)
	log      zerolog.Logger
}

// New returns a Limiter for cfg, after validating it.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rate.IsZero() {
		cfg.Rate = DefaultRate
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Elapsed == nil {
		cfg.Elapsed = gcra.Since(cfg.Now)
	}
	proxies := make([]netip.Prefix, len(cfg.TrustedProxies))
	for i, p := range cfg.TrustedProxies {
		proxies[i] = p.Masked()
	}
	if cfg.OperatorRate.IsZero() {
		cfg.OperatorRate = DefaultOperatorRate
	}
	var op *gcra.Limiter
	if cfg.Operator != nil && !cfg.NoOperatorLimit {
		op = gcra.NewLimiter(cfg.OperatorRate, cfg.MaxClients)
	}
	return &Limiter{
		lim:      gcra.NewLimiter(cfg.Rate, cfg.MaxClients),
		op:       op,
		operator: cfg.Operator,
		proxies:  proxies,
		elapsed:  cfg.Elapsed,
		refused:  cfg.Refused,
		log:      cfg.Log.With().Str("component", "edge").Logger(),
	}, nil
}

// Clients returns how many clients the Limiter remembers for the public
// routes.
func (l *Limiter) Clients() int { return l.lim.Len() }

// Wrap returns next behind the limit.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lim, reason := l.lim, RefusedRate
		if l.operator != nil && l.operator(r) {
			if l.op == nil {
				next.ServeHTTP(w, r)
				return
			}
			lim, reason = l.op, RefusedOperatorRate
		}
		client := l.ClientAddr(r)
		res := lim.Allow(clientKey(client, r.RemoteAddr), l.elapsed())
		h := w.Header()
		limit, remaining, reset := strconv.Itoa(res.Limit), strconv.Itoa(res.Remaining), seconds(res.ResetAfter)
		h.Set("RateLimit-Limit", limit)
		h.Set("RateLimit-Remaining", remaining)
		h.Set("RateLimit-Reset", reset)
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		if res.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		if l.refused != nil {
			l.refused(reason)
		}
		retry := seconds(res.RetryAfter)
		logctx.Logger(r.Context(), l.log).Debug().Str("client", client.String()).Str("path", r.URL.Path).Str("reason", reason).Str("retry_after", retry).
			Msg("request refused: client over its rate")
		h.Set("Retry-After", retry)
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprintf(w, "Too many requests from your address. Try again in %s seconds.\n", retry)
	})
}

// seconds writes d in whole seconds, rounded up.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// ClientAddr returns the address of r's client: the connection's remote
// address, or, when that is a trusted proxy, the address X-Forwarded-For
// names before the trusted proxies (read from the right: each proxy
// appends the address it was called from). If every address is a
// trusted proxy, it is the leftmost; an unreadable entry ends the walk
// at the last address read. The zero Addr means RemoteAddr itself could
// not be read.
func (l *Limiter) ClientAddr(r *http.Request) netip.Addr {
	addr, ok := parseAddr(r.RemoteAddr)
	if !ok || !l.trusted(addr) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseAddr(hops[i])
		if !ok {
			break
		}
		addr = a
		if !l.trusted(a) {
			break
		}
	}
	return addr
}

// trusted reports whether a is one of the trusted proxies.
func (l *Limiter) trusted(a netip.Addr) bool { return contains(l.proxies, a) }

// parseAddr reads an address with or without a port ("192.0.2.1",
// "192.0.2.1:4711", "[2001:db8::1]:4711", "2001:db8::1"), unmapping
// IPv4-mapped IPv6 addresses and dropping zones.
func parseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// clientKey is what a client's rate is kept under: its IPv4 address, its
// IPv6 /64, or the raw remote address when unreadable.
func clientKey(a netip.Addr, remote string) string {
	switch {
	case !a.IsValid():
		return "?" + remote
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// ParseProxies reads a comma-separated list of CIDR prefixes or single
// addresses ("10.0.0.0/8, 192.0.2.7, 2001:db8::/32"), as the
// PINBOT_TRUSTED_PROXIES setting holds them. Empty means none.
func ParseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("edge: %q is not an address or CIDR prefix such as 10.0.0.0/8", f)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("edge: %q is not an address or CIDR prefix such as 10.0.0.0/8", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
