package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/dashboard"
	"github.com/pinbot/pinbot/internal/metrics"
)

// ReadyPath answers 200 when the program can serve (see readiness), else
// 503 with what is not ready.
const ReadyPath = "/readyz"

// readyTimeout bounds the checks of one readiness request.
const readyTimeout = 2 * time.Second

// probeEvery is how long the outcome of a probe of the engine store
// answers readiness requests: however often /readyz is asked, the store
// gets at most one probe write a second.
const probeEvery = time.Second

// readiness answers ReadyPath: 200 {"ready":true} only while nothing
// below fails, else 503 {"ready":false,"failing":[...]} naming each
// failure. The checks, in order:
//
//   - the program is not shutting down (Close flips this first);
//   - the HTTP server is serving;
//   - the engine store takes a durable write (actors.Engine.Probe, at
//     most once per probeEvery);
//   - the token store can be read (links.Store.Ping);
//   - in a cluster, the member holds its lease within its serving
//     deadline, follows etcd's view and is registered (clusterReady),
//     and it has not given up its partitions for a clock out of bound
//     with its peers' (skewCheck: "clock beyond 1s from m1, m3:
//     partitions given up");
//   - every gateway shard the bot opened is connected (none before
//     Start); in a cluster, every shard this member holds.
//
// The body names what fails, never an error's text (the listener may be
// public); the log has the errors.
type readiness struct {
	closing atomic.Bool
	serving atomic.Bool
	engine  *actors.Engine
	links   links.Store
	// shards reports the gateway's shards (bot.Bot.Shards), once the bot
	// is built.
	shards atomic.Pointer[func() []bot.ShardState]
	// cluster, in a cluster, names what keeps the member from serving.
	cluster func() []string
	log     zerolog.Logger

	// probeEvery is how long a probe's outcome is reused (0: never).
	// Requests wait for the probe in flight rather than start their own.
	probeEvery time.Duration
	probeMu    sync.Mutex
	probedAt   time.Time // Go's monotonic clock; zero before the first probe
	probeErr   error
}

// readyBody is the JSON body of a readiness answer.
type readyBody struct {
	Ready   bool     `json:"ready"`
	Failing []string `json:"failing,omitempty"`
}

// check returns what is not ready; none means ready.
func (r *readiness) check(ctx context.Context) []string {
	if r.closing.Load() {
		return []string{"shutting down"}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var failing []string
	if !r.serving.Load() {
		failing = append(failing, "HTTP listener not serving")
	}
	if err := r.probe(ctx); err != nil {
		r.log.Warn().Err(err).Msg("readiness: the engine store takes no write")
		failing = append(failing, "engine store not writable")
	}
	if err := r.links.Ping(ctx); err != nil {
		r.log.Warn().Err(err).Msg("readiness: the token store cannot be read")
		failing = append(failing, "token store not readable")
	}
	if r.cluster != nil {
		failing = append(failing, r.cluster()...)
	}
	var shards []bot.ShardState
	if f := r.shards.Load(); f != nil {
		shards = (*f)()
	}
	if shards == nil {
		failing = append(failing, "gateway not connected")
	}
	for _, s := range shards {
		if !s.Connected {
			failing = append(failing, fmt.Sprintf("gateway shard %d disconnected", s.ID))
		}
	}
	return failing
}

// probe probes the engine store, or returns the outcome of a probe less
// than probeEvery old.
func (r *readiness) probe(ctx context.Context) error {
	r.probeMu.Lock()
	defer r.probeMu.Unlock()
	if r.probeEvery > 0 && !r.probedAt.IsZero() && time.Since(r.probedAt) < r.probeEvery {
		return r.probeErr
	}
	r.probeErr = r.engine.Probe(ctx)
	r.probedAt = time.Now()
	return r.probeErr
}

func (r *readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	failing := r.check(req.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if len(failing) > 0 {
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(readyBody{Ready: len(failing) == 0, Failing: failing})
}

// routes is the HTTP listener's handler: the metrics at metrics.Path,
// readiness at ReadyPath, and everything else (the OAuth callback, the
// liveness check at web.HealthPath) from h.
func routes(h *web.Handler, m *metrics.Metrics, ready *readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(metrics.Path, getOnly(m.Handler()))
	mux.Handle(ReadyPath, getOnly(ready))
	mux.Handle("/", h)
	return mux
}

// operatorRoute reports whether r is for one of the operator's routes:
// the health checks, the metrics and the dashboard. The per-client limit
// keeps their requests apart from the public pages' (edge.Config.Operator).
func operatorRoute(r *http.Request) bool {
	switch p := r.URL.Path; p {
	case web.HealthPath, ReadyPath, metrics.Path, dashboard.Path:
		return true
	default:
		return strings.HasPrefix(p, dashboard.Path+"/")
	}
}

// getOnly answers 405 to every method but GET, as the rest of the
// listener does.
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "this address only answers GET", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
