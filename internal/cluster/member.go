package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// Errors of a Member.
var (
	// ErrNotOwner: this member does not serve the account's partition (it
	// is not its owner, or its serving deadline passed). The request may
	// go to OwnerOf.
	ErrNotOwner = errors.New("cluster: partition not served by this member")
	// ErrMoved: the account's partition is changing hands here (being
	// acquired, or handed over to another member); retry shortly.
	ErrMoved = errors.New("cluster: partition changing hands")
	// ErrMemberExists is wrapped by Start's error when a member key with
	// the same id lives: another process uses the id, or this member's
	// previous run, whose lease has not expired yet.
	ErrMemberExists = errors.New("cluster: member id in use")
)

// Member is one process's membership of a cluster: its lease, its view of
// the other members and of the partitions' owners, and the partitions it
// owns. Its methods are safe for simultaneous use.
type Member struct {
	cfg   Config
	id    string
	keys  partition.Keys
	cli   *clientv3.Client
	clock Clock
	log   zerolog.Logger
	value string // the member key's value

	ctx    context.Context // ends once the member has stopped
	cancel context.CancelFunc
	wg     sync.WaitGroup // the deadline and keep-alive loops

	kick       chan struct{} // wakes the run loop
	deadlineCh chan struct{} // wakes the deadline loop
	closeCh    chan *closeReq
	closeReq   *closeReq // received by the run loop, not yet served
	done       chan struct{}
	closeOnce  sync.Once
	closeErr   error

	// lossMu is held while every partition is lost and their Lost called,
	// so that no acquisition begins before those calls end.
	lossMu sync.Mutex

	// handovers counts the handovers running on their own goroutines
	// (startHandover); handoverSem bounds them to Parallel at once.
	handovers   sync.WaitGroup
	handoverSem chan struct{}

	mu            sync.Mutex
	lease         clientv3.LeaseID // 0: none
	ttl           time.Duration    // the lease's granted TTL
	deadline      time.Duration    // serve until then, on clock
	lapsed        bool             // the deadline passed, or no lease: nothing held
	stopKeepAlive context.CancelFunc
	registered    int64 // revision of the member key's put
	held          map[res]*tenure
	retryAt       map[res]time.Duration // no acquisition before, after Acquired failed
	// takenAt and deletedAt hold, for a resource whose owner key this
	// member found taken when acquiring, or deleted itself, the revision
	// etcd answered at: it is not acquired, or not deleted as stale,
	// again until the view has caught up with that revision (else each
	// watch event, one at a time, would bring the same requests again).
	takenAt, deletedAt map[res]int64
	// handing holds the resources whose handover goroutine has not ended:
	// none is acquired again before its callbacks are over.
	handing map[res]struct{}
	view    view
	synced  bool
	closing bool
	susp    suspension // Suspend, Resume (suspend.go)
	// shardsLeft says LeaveShards was called: the member runs no shards
	// from then on (shard_leave.go).
	shardsLeft bool
	// changes is closed and replaced at every change of state (changed),
	// for LeaveShards to wait on.
	changes chan struct{}
}

// tenure is one holding of a partition or a shard: from the owner key's
// creation to its deletion, or to its loss.
type tenure struct {
	r      res
	rev    int64 // the owner key's create revision
	state  tenureState
	lost   bool               // no longer held; whoever runs its callback calls Lost
	cancel context.CancelFunc // ends Release's context while releasing
}

// fence is a partition's tenure's fencing token.
func (t *tenure) fence() partition.Fence {
	return partition.Fence{Partition: partition.ID(t.r.n), Revision: t.rev}
}

type tenureState uint8

const (
	acquiring tenureState = iota // Acquired running
	serving
	releasing // Release running
)

type closeReq struct {
	ctx  context.Context
	done chan error
}

// Start registers the member under a new lease, reads the cluster's
// members and owners, and starts keeping the lease alive and acquiring the
// partitions this member should own. It returns once registered; the
// partitions come after. If etcd cannot be reached, or the member's id is
// in use (ErrMemberExists), Start returns an error once ctx ends or etcd
// answers: the caller retries with a backoff (a restarted member waits for
// its previous lease to expire, at most a TTL).
func Start(ctx context.Context, cfg Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	value, err := json.Marshal(MemberInfo{Addr: cfg.Addr, Started: time.Now().UTC(), Partitions: cfg.Partitions, Shards: cfg.Shards.Count})
	if err != nil {
		return nil, fmt.Errorf("cluster: member value: %w", err)
	}
	m := &Member{
		cfg:         cfg,
		id:          cfg.Member,
		keys:        cfg.Keys,
		cli:         cfg.Client,
		clock:       cfg.Clock,
		log:         cfg.Log.With().Str("component", "cluster").Str("member", cfg.Member).Logger(),
		value:       string(value),
		kick:        make(chan struct{}, 1),
		deadlineCh:  make(chan struct{}, 1),
		closeCh:     make(chan *closeReq),
		done:        make(chan struct{}),
		held:        make(map[res]*tenure),
		retryAt:     make(map[res]time.Duration),
		takenAt:     make(map[res]int64),
		deletedAt:   make(map[res]int64),
		handing:     make(map[res]struct{}),
		lapsed:      true,
		handoverSem: make(chan struct{}, cfg.Parallel),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := m.checkPeers(ctx); err != nil {
		m.cancel()
		return nil, err
	}
	if err := m.register(ctx); err != nil {
		m.cancel()
		m.wg.Wait()
		return nil, err
	}
	if err := m.sync(ctx); err != nil {
		m.mu.Lock()
		lease := m.lease
		m.mu.Unlock()
		m.revoke(lease)
		m.cancel()
		m.wg.Wait()
		return nil, err
	}
	m.wg.Go(m.deadlineLoop)
	go m.run()
	m.log.Info().Str("addr", cfg.Addr).Int("partitions", cfg.Partitions).Msg("cluster member started")
	return m, nil
}

// checkPeers refuses, before registering, a cluster whose members run
// another partition count: they would pick other owners.
func (m *Member) checkPeers(ctx context.Context) error {
	if err := m.sync(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, mk := range m.view.members {
		if !m.compatible(mk.info) {
			return fmt.Errorf("cluster: member %s runs %d partitions, this one %d", id, mk.info.Partitions, m.cfg.Partitions)
		}
		if n := mk.info.Shards; n != 0 && m.cfg.Shards.Count != 0 && n != m.cfg.Shards.Count {
			return fmt.Errorf("cluster: member %s runs %d gateway shards, this one %d", id, n, m.cfg.Shards.Count)
		}
	}
	return nil
}

// compatible says whether a member runs this member's partition count
// (one whose key cannot be read is taken to).
func (m *Member) compatible(info MemberInfo) bool {
	return info.Partitions == 0 || info.Partitions == m.cfg.Partitions
}

// ID returns the member's id.
func (m *Member) ID() string { return m.id }

// Fence returns partition p's fencing token while this member holds p's
// owner key and is within its serving deadline, also while p is being
// acquired or handed over (its writes are still this member's to make).
func (m *Member) Fence(p partition.ID) (partition.Fence, bool) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.held[partitionOf(p)]
	if t == nil || m.lapsed || now >= m.deadline {
		return partition.Fence{}, false
	}
	return t.fence(), true
}

// Serving returns the fencing token of account's partition if this member
// serves it now: ErrMoved while the partition changes hands here,
// ErrNotOwner otherwise. It is cheap and does not block on etcd.
func (m *Member) Serving(account string) (partition.Fence, error) {
	p := partition.Of(account, m.cfg.Partitions)
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.held[partitionOf(p)]
	switch {
	case t == nil || m.lapsed || now >= m.deadline:
		return partition.Fence{}, ErrNotOwner
	case t.state != serving:
		return partition.Fence{}, ErrMoved
	}
	return t.fence(), nil
}

// OwnerOf returns the member that holds account's partition, as this
// member last saw the owner and member keys: where to forward a request
// that Serving refused with ErrNotOwner. false when the partition has no
// owner, or its owner no member key. It may name this member itself, when
// it holds the key but may not serve (its deadline passed): the request
// then fails.
func (m *Member) OwnerOf(account string) (MemberInfo, bool) {
	p := partition.Of(account, m.cfg.Partitions)
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.view.owners[partitionOf(p)]
	if !ok {
		return MemberInfo{}, false
	}
	mk, ok := m.view.members[o.member]
	return mk.info, ok
}

// Members returns the live members, this one included once seen, by id.
func (m *Member) Members() []MemberInfo {
	m.mu.Lock()
	out := make([]MemberInfo, 0, len(m.view.members))
	for _, mk := range m.view.members {
		out = append(out, mk.info)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b MemberInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// Held returns the partitions whose owner key this member holds, being
// acquired or handed over included, in order.
func (m *Member) Held() []partition.ID {
	m.mu.Lock()
	out := make([]partition.ID, 0, len(m.held))
	for r := range m.held {
		if r.kind == partitionRes {
			out = append(out, partition.ID(r.n))
		}
	}
	m.mu.Unlock()
	slices.Sort(out)
	return out
}

// Status is a member's state, for /readyz and the dashboard.
type Status struct {
	Member string `json:"member"`
	// Lease is the etcd lease's id, 0 while the member has none.
	Lease int64 `json:"lease"`
	// TTL is the lease's granted TTL.
	TTL time.Duration `json:"ttl"`
	// Deadline is the instant on the member's Clock until which it may
	// serve, and Remaining the time left until then (0 when past).
	Deadline  time.Duration `json:"deadline"`
	Remaining time.Duration `json:"remaining"`
	// Ready is Member.Ready.
	Ready bool `json:"ready"`
	// Synced says the view of members and owners follows etcd's watch.
	Synced bool `json:"synced"`
	// Held counts the partitions held and HeldShards the gateway shards,
	// Moving those of either being acquired or handed over.
	Held       int `json:"held"`
	HeldShards int `json:"held_shards"`
	Moving     int `json:"moving"`
	// Members counts the live members seen.
	Members    int  `json:"members"`
	Partitions int  `json:"partitions"`
	Shards     int  `json:"shards"`
	Closing    bool `json:"closing"`
}

// Status returns the member's state.
func (m *Member) Status() Status {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{
		Member:     m.id,
		Lease:      int64(m.lease),
		TTL:        m.ttl,
		Deadline:   m.deadline,
		Remaining:  max(m.deadline-now, 0),
		Ready:      m.readyLocked(now),
		Synced:     m.synced,
		Members:    len(m.view.members),
		Partitions: m.cfg.Partitions,
		Shards:     m.cfg.Shards.Count,
		Closing:    m.closing,
	}
	for r, t := range m.held {
		if r.kind == shardRes {
			s.HeldShards++
		} else {
			s.Held++
		}
		if t.state != serving {
			s.Moving++
		}
	}
	return s
}

// Ready reports whether the member is registered, within its serving
// deadline, sees itself among the members and follows etcd's watch: it
// can serve what it holds and acquire what it should.
func (m *Member) Ready() bool {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyLocked(now)
}

func (m *Member) readyLocked(now time.Duration) bool {
	self, ok := m.view.members[m.id]
	return !m.closing && m.lease != 0 && !m.lapsed && now < m.deadline &&
		m.synced && ok && self.lease == m.lease
}

// Close hands every partition over (Release, then its key deleted), after
// deleting the member key so that the others no longer pick this member,
// then revokes the lease. ctx bounds the Release calls; the final deletes
// and the revocation wait for etcd at most a TTL more. A handover already
// under way when Close is called is finished first. Close returns ctx's
// error if it ended before every partition was released, and is
// idempotent.
func (m *Member) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		req := &closeReq{ctx: ctx, done: make(chan error, 1)}
		select {
		case m.closeCh <- req:
			m.closeErr = <-req.done
		case <-m.done:
		}
		<-m.done
		m.cancel()
		m.wg.Wait()
		m.log.Info().Msg("cluster member closed")
	})
	return m.closeErr
}

// changed tells the waiters of LeaveShards and the tests' hook that the
// member's state changed.
func (m *Member) changed() {
	m.mu.Lock()
	if m.changes != nil {
		close(m.changes)
		m.changes = nil
	}
	m.mu.Unlock()
	if h := m.cfg.hooks.changed; h != nil {
		h()
	}
}

// changesLocked returns a channel closed at the next change of the
// member's state. m.mu is held.
func (m *Member) changesLocked() <-chan struct{} {
	if m.changes == nil {
		m.changes = make(chan struct{})
	}
	return m.changes
}

// wake wakes the run loop.
func (m *Member) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Member) observe(f func(Observer)) {
	if m.cfg.Observer != nil {
		f(m.cfg.Observer)
	}
}

// opTimeout bounds one etcd request of the member's own.
func (m *Member) opTimeout() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ttl > 0 {
		return m.ttl
	}
	return ttlSeconds(m.cfg.LeaseTTL)
}

func (m *Member) observeShard(f func(ShardObserver)) {
	if o, ok := m.cfg.Observer.(ShardObserver); ok {
		f(o)
	}
}
