package dashboard

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
)

// Defaults of Config.
const (
	// DefaultTTL is how long one assembly of the data serves every view:
	// a survey costs up to DefaultMaxAccounts status reads.
	DefaultTTL = 10 * time.Second
	// DefaultTop is how many accounts each list shows.
	DefaultTop = 10
	// DefaultMaxAccounts bounds the accounts one survey examines.
	DefaultMaxAccounts = actors.DefaultSurveyMax
	// SurveyTimeout bounds one survey.
	SurveyTimeout = 10 * time.Second
)

// Config configures a Dashboard.
type Config struct {
	// Token is what requests must carry as "Authorization: Bearer
	// <token>". Required: without a token there is no dashboard.
	Token []byte
	// Engine is surveyed for the accounts, the queue and the timeline.
	// Required.
	Engine *actors.Engine
	// Gatherer gives the metric families read by name (see the Metric
	// constants); nil shows "no data" for each.
	Gatherer prometheus.Gatherer
	// TTL is how long one assembly of the data is shown to every request
	// (0: DefaultTTL); Top how many accounts each list shows (0:
	// DefaultTop); MaxAccounts how many accounts one survey examines at
	// most (0: DefaultMaxAccounts).
	TTL         time.Duration
	Top         int
	MaxAccounts int
	// Now is the wall clock; default time.Now.
	Now func() time.Time
	// Log receives the failures to read the engine or the metrics,
	// tagged component=dashboard.
	Log zerolog.Logger
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case len(c.Token) == 0:
		return errors.New("dashboard: Config.Token is empty")
	case c.Engine == nil:
		return errors.New("dashboard: Config.Engine is nil")
	case c.TTL < 0:
		return fmt.Errorf("dashboard: Config.TTL %v is negative", c.TTL)
	case c.Top < 0:
		return fmt.Errorf("dashboard: Config.Top %d is negative", c.Top)
	case c.MaxAccounts < 0:
		return fmt.Errorf("dashboard: Config.MaxAccounts %d is negative", c.MaxAccounts)
	}
	return nil
}

// Dashboard serves the operator dashboard under /admin (see the package
// documentation). It is safe for simultaneous use by multiple
// goroutines.
type Dashboard struct {
	tokenSum [sha256.Size]byte
	eng      *actors.Engine
	gatherer prometheus.Gatherer
	ttl      time.Duration
	top, max int
	now      func() time.Time
	log      zerolog.Logger

	// mu serializes assemblies: requests during one wait for it and
	// share its result.
	mu       sync.Mutex
	cached   *Data
	cachedAt time.Time
}

// New returns a Dashboard for cfg, after validating it.
func New(cfg Config) (*Dashboard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Dashboard{
		tokenSum: sha256.Sum256(cfg.Token),
		eng:      cfg.Engine,
		gatherer: cfg.Gatherer,
		ttl:      cfg.TTL,
		top:      cfg.Top,
		max:      cfg.MaxAccounts,
		now:      cfg.Now,
		log:      cfg.Log.With().Str("component", "dashboard").Logger(),
	}
	if d.ttl == 0 {
		d.ttl = DefaultTTL
	}
	if d.top == 0 {
		d.top = DefaultTop
	}
	if d.max == 0 {
		d.max = DefaultMaxAccounts
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d, nil
}

// Data returns the dashboard's data, assembled at most once per TTL:
// every view within a TTL of an assembly shows it.
func (d *Dashboard) Data(ctx context.Context) *Data {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if d.cached != nil && now.Sub(d.cachedAt) < d.ttl && !now.Before(d.cachedAt) {
		return d.cached
	}
	d.cached, d.cachedAt = d.assemble(ctx), now
	return d.cached
}

// assemble surveys the engine and reads the metrics.
func (d *Dashboard) assemble(ctx context.Context) *Data {
	sctx, cancel := context.WithTimeout(ctx, SurveyTimeout)
	defer cancel()
	s, serr := d.eng.Survey(sctx, actors.SurveyOptions{Top: d.top, Max: d.max, Bucket: bucketFor(d.eng.Config().Window)})
	if serr != nil {
		logctx.Logger(ctx, d.log).Warn().Err(serr).Msg("surveying the engine failed")
	}
	var (
		m        Metrics
		problems []string
	)
	if d.gatherer != nil {
		fams, err := d.gatherer.Gather()
		if err != nil {
			// Gather returns what it could along with the error.
			logctx.Logger(ctx, d.log).Warn().Err(err).Msg("gathering the metrics failed")
			problems = append(problems, "Some metrics could not be gathered (see the log).")
		}
		m = readMetrics(fams)
	}
	return assemble(s, serr, m, problems, d.now())
}

// niceBuckets are the widths the timeline's buckets may take.
var niceBuckets = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// bucketFor returns the timeline's bucket width for a window: the
// smallest round width that cuts it into at most 48 bars (15 minutes for
// 12 hours).
func bucketFor(window time.Duration) time.Duration {
	for _, b := range niceBuckets {
		if window/b <= 48 {
			return b
		}
	}
	return niceBuckets[len(niceBuckets)-1]
}
