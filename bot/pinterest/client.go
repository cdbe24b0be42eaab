package pinterest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/logctx"
	"golang.org/x/oauth2"
)

// Client talks to Pinterest's API v5 on behalf of any number of accounts,
// each represented by a Session. A Client is safe for simultaneous use by
// multiple goroutines.
type Client struct {
	cfg   Config
	http  *http.Client
	oauth *oauth2.Config
	log   zerolog.Logger

	// refreshes counts the token refreshes in flight (see accessToken).
	refreshes sync.WaitGroup

	// breaker guards every request (see BreakerConfig); appPauses are
	// the app's rate-limit pauses (see pausesOf).
	breaker   *breaker
	appPauses pauses
}

// New returns a Client for cfg, after validating it.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.With().Str("component", "pinterest").Logger()
	hc := wrapHTTPClient(cfg.HTTPClient, log)
	hc.Transport = &sinkTransport{base: hc.Transport}
	host := cfg.APIBase
	if u, err := url.Parse(cfg.APIBase); err == nil {
		host = u.Host
	}
	return &Client{
		cfg:     cfg,
		breaker: newBreaker(host, cfg.Breaker, cfg.Now),
		http:    hc,
		oauth: &oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			RedirectURL:  cfg.RedirectURL,
			Endpoint: oauth2.Endpoint{
				AuthURL:   cfg.AuthURL,
				TokenURL:  cfg.APIBase + "/oauth/token",
				AuthStyle: oauth2.AuthStyleInHeader,
			},
		},
		log: log,
	}, nil
}

// call describes one API request.
type call struct {
	method string
	path   string // below APIBase, such as "/pins"
	query  url.Values
	body   []byte // JSON; nil for none
	// sideEffect marks a request that creates something: it is never
	// retried, and a failure that leaves its outcome open is
	// ErrOutcomeUnknown.
	sideEffect bool
	// kind names the endpoint in rate-limit pauses when its path holds
	// an id, such as "GET /boards/{board_id}/pins"; "" means op().
	kind string
}

func (cl call) op() string { return cl.method + " " + cl.path }

// pauseKey is the kind of request cl is, as rate-limit pauses count it:
// Pinterest counts an endpoint as one, whatever ids its path holds.
func (cl call) pauseKey() string {
	if cl.kind != "" {
		return cl.kind
	}
	return cl.op()
}

// response is an API answer, its body read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do performs cl for s and decodes a 2xx answer's JSON body into out.
//
// A 401 answer refreshes the grant and repeats the request once; a second
// 401 is ErrReauthRequired. A request without side effects is repeated
// after a 5xx answer, a 429 or a transport error, with backoff (see
// RetryConfig). A request with side effects is never repeated except
// after a 401, which means Pinterest did not act on it. Every request
// first waits for (or, with side effects, fails on) a rate-limit pause
// Pinterest announced for its kind (see admit), and goes through the
// circuit breaker.
func (c *Client) do(ctx context.Context, s *Session, cl call, out any) error {
	if s == nil {
		return fmt.Errorf("pinterest: %s: nil Session", cl.op())
	}
	op, key := cl.op(), cl.pauseKey()
	ps := c.pausesOf(s)
	reauthed := false
	rejected := ""
	failures := 0 // failed tries that may be repeated
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pinterest: %s: %w", op, err)
		}
		tok, err := c.accessToken(ctx, s, rejected)
		if err != nil {
			return err
		}
		if err := c.admit(ctx, ps, key, !cl.sideEffect); err != nil {
			return err
		}
		if cl.sideEffect {
			if err := c.timeLeft(ctx, op); err != nil {
				c.logger(ctx).Warn().Str("op", op).Err(err).Msg("pinterest request not sent")
				return err
			}
		}
		res, err := c.send(ctx, cl, tok)
		if errors.Is(err, ErrCircuitOpen) {
			c.logger(ctx).Warn().Str("op", op).Msg("pinterest request not sent: circuit open")
			return fmt.Errorf("%w: %s", err, op)
		}
		if err != nil {
			if cl.sideEffect {
				c.logger(ctx).Warn().Str("op", op).Err(err).Msg("pinterest request failed, outcome unknown")
				return fmt.Errorf("%w: pinterest: %s: %w", ErrOutcomeUnknown, op, err)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("pinterest: %s: %w", op, err)
			}
			failures++
			if c.retry(ctx, op, failures, 0) {
				continue
			}
			c.logger(ctx).Warn().Str("op", op).Err(err).Msg("pinterest request failed")
			return gaveUp(ctx, op, fmt.Errorf("%w: pinterest: %s: %w", ErrUnavailable, op, err))
		}
		if res.status != http.StatusTooManyRequests {
			c.observe(ctx, ps, key, res.header)
		}

		switch {
		case res.status >= 200 && res.status < 300:
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(res.body, out); err != nil {
				err = fmt.Errorf("pinterest: %s: decoding answer (rid %s): %w", op, res.header.Get(ridHeader), err)
				if cl.sideEffect {
					return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
				}
				return err
			}
			return nil

		case res.status == http.StatusUnauthorized:
			ae := c.apiError(op, res, tok)
			if reauthed {
				ae.kind = ErrReauthRequired
				ae.scope = ae.Code == codeInsufficientScope
				c.logFailure(ctx, ae, "pinterest access token rejected after refresh")
				return ae
			}
			reauthed = true
			rejected = tok
			c.logger(ctx).Info().Str("op", op).Str("rid", ae.RequestID).
				Msg("pinterest access token rejected, refreshing")
			continue

		case res.status == http.StatusTooManyRequests:
			rl := c.rateLimited(ctx, c.apiError(op, res, tok), res.header)
			ps.set(key, pause{until: rl.ResetAt, spam: rl.Spam})
			if !cl.sideEffect && !rl.Spam {
				failures++
				if c.retry(ctx, op, failures, rl.Wait) {
					continue
				}
			}
			return rl

		case res.status >= 500:
			ae := c.apiError(op, res, tok)
			if cl.sideEffect {
				c.logFailure(ctx, ae, "pinterest server error, outcome unknown")
				return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ae)
			}
			failures++
			if c.retry(ctx, op, failures, 0) {
				continue
			}
			ae.kind = ErrUnavailable
			c.logFailure(ctx, ae, "pinterest server error")
			return gaveUp(ctx, op, ae)

		default:
			return c.classify(ctx, op, res, tok)
		}
	}
}

// send performs one HTTP exchange for cl through the circuit breaker,
// bounded by RequestTimeout. It fails with ErrCircuitOpen, having sent
// nothing, while the breaker is open.
func (c *Client) send(ctx context.Context, cl call, accessToken string) (*response, error) {
	done, err := c.breaker.allow()
	if err != nil {
		return nil, err
	}
	res, err := c.exchange(ctx, cl, accessToken)
	switch {
	case err != nil && ctx.Err() != nil:
		done(errBreakerExcluded)
	case err != nil, res.status >= 500:
		done(errBreakerFailure)
	default:
		done(nil)
	}
	return res, err
}

// exchange performs one HTTP exchange for cl, bounded by RequestTimeout.
func (c *Client) exchange(ctx context.Context, cl call, accessToken string) (*response, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	u := c.cfg.APIBase + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readCapped(resp.Body, c.cfg.MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// classify turns a 4xx answer other than 401 to a request made with
// accessToken into an error.
func (c *Client) classify(ctx context.Context, op string, res *response, accessToken string) error {
	ae := c.apiError(op, res, accessToken)
	switch {
	case res.status == http.StatusTooManyRequests:
		return c.rateLimited(ctx, ae, res.header)
	case isImageRejection(ae.Status, ae.Code):
		ae.kind = ErrImageRejected
	case isInvalidGrant(ae.Status, ae.Code, ""):
		ae.kind = ErrReauthRequired
	}
	c.logFailure(ctx, ae, "pinterest request rejected")
	return ae
}

// rateLimited builds the error for a 429 answer with header h.
func (c *Client) rateLimited(ctx context.Context, ae *APIError, h http.Header) *RateLimitError {
	spam := c.isSpam(ae)
	fallback := c.cfg.RateLimitWait
	if spam {
		fallback = c.cfg.SpamWait
	}
	now := c.cfg.Now()
	at := resetAt(h, now, fallback)
	c.logger(ctx).Warn().Str("op", ae.Op).Int("status", ae.Status).Int("code", ae.Code).Str("rid", ae.RequestID).
		Bool("spam", spam).Time("reset_at", at).Msg("pinterest rate limited")
	return &RateLimitError{API: ae, ResetAt: at, Wait: at.Sub(now), Spam: spam}
}

// isSpam reports whether a 429 answer comes from Pinterest's spam and abuse
// defences. Assumption: Pinterest documents no code for this; its spam
// blocks have been seen to say "...a block we have in place to combat
// spam...", so a message mentioning spam, or a code in Config.SpamCodes,
// marks one.
func (c *Client) isSpam(ae *APIError) bool {
	return strings.Contains(strings.ToLower(ae.Message), "spam") || slices.Contains(c.cfg.SpamCodes, ae.Code)
}

// apiError reads an error answer to a request made with accessToken. A
// message that echoes the token (a misbehaving proxy or server) has it
// cut out: the message goes into errors, logs and replies.
func (c *Client) apiError(op string, res *response, accessToken string) *APIError {
	eb := parseErrorBody(res.body)
	return &APIError{
		Op:        op,
		Status:    res.status,
		Code:      eb.code,
		Message:   scrub(eb.message, accessToken),
		RequestID: res.header.Get(ridHeader),
	}
}

func (c *Client) logFailure(ctx context.Context, ae *APIError, msg string) {
	c.logger(ctx).Warn().Str("op", ae.Op).Int("status", ae.Status).Int("code", ae.Code).
		Str("rid", ae.RequestID).Str("pinterest_message", ae.Message).Msg(msg)
}

// errorBody is what is read from an error answer.
type errorBody struct {
	code       int
	message    string
	oauthError string
}

// parseErrorBody reads Pinterest's {"code": int, "message": string} error
// body, tolerating a string code and RFC 6749's error and
// error_description. Anything unreadable yields zero fields.
func parseErrorBody(b []byte) errorBody {
	var raw struct {
		Code        json.RawMessage `json:"code"`
		Message     string          `json:"message"`
		Error       string          `json:"error"`
		Description string          `json:"error_description"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return errorBody{}
	}
	var eb errorBody
	if len(raw.Code) > 0 {
		s := strings.Trim(string(raw.Code), `"`)
		if n, err := strconv.Atoi(s); err == nil {
			eb.code = n
		}
	}
	eb.message = raw.Message
	if eb.message == "" {
		eb.message = raw.Description
	}
	eb.message = truncate(eb.message, maxMessageBytes)
	eb.oauthError = raw.Error
	return eb
}

// errNoID is returned when a success answer lacks the object's id.
var errNoID = errors.New("answer has no id")

// logger is the Client's logger tagged with the IDs ctx carries (the
// command, queued pin or HTTP request the call works for).
func (c *Client) logger(ctx context.Context) *zerolog.Logger {
	return logctx.Logger(ctx, c.log)
}

// scrubbed replaces a secret found in a message read from Pinterest.
const scrubbed = "[REDACTED]"

// scrub returns msg with every non-empty secret replaced.
func scrub(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, scrubbed)
		}
	}
	return msg
}
