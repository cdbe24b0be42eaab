package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/etcdlinks"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/clusterengine"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
	"github.com/pinbot/pinbot/persistence/etcdstore"
)

// clusterImportOptions are the options pinbot cluster import takes.
var clusterImportOptions = []*option{
	&dataDirOption, &logLevelOption, &etcdEndpointsOption,
	&keyFileOption, &clusterKeyFileOption, &shardsOption,
	&etcdCAFileOption, &etcdCertFileOption, &etcdKeyFileOption,
	&etcdUsernameOption, &etcdPasswordFileOption,
}

// dryRunHelp describes the --dry-run flag of cluster import.
const dryRunHelp = "check and count what would be imported, and write nothing"

// Bounds of the import's etcd writes: the accounts of one store Write
// (etcdstore splits it in transactions within etcd's limits), and the
// operations and bytes of one account's part, so that no part is too
// large for one transaction (etcdstore.DefaultMaxTxnOps,
// DefaultMaxTxnBytes).
const (
	importBatchAccounts = 64
	importPartOps       = 100
	importPartBytes     = 512 << 10
)

// importConflictsShown is how many conflicting accounts an error names.
const importConflictsShown = 5

// clusterImportCommand serves "pinbot cluster import": it moves the state
// of a single process's data directory into a cluster's etcd.
func clusterImportCommand(st settings, args []string, stdout io.Writer) error {
	const cmd = "cluster import"
	flags := newFlagSet(cmd)
	bindOptions(&st, flags, clusterImportOptions)
	dry := flags.Bool("dry-run", false, dryRunHelp)
	if err := parseFlags(flags, cmd, args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: cmd, err: fmt.Errorf("cluster import: unexpected argument %q", flags.Arg(0))}
	}
	if _, err := st.validate(); err != nil {
		return &usageError{cmd: cmd, err: err}
	}
	endpoints := splitEndpoints(st.etcdEndpoints.value)
	if len(endpoints) == 0 {
		return &usageError{cmd: cmd, err: fmt.Errorf("cluster import needs %s: the etcd cluster to import into", st.etcdEndpoints.both())}
	}
	for _, s := range []*setting{&st.keyFile, &st.clusterKeyFile} {
		if strings.TrimSpace(s.value) == "" {
			return &usageError{cmd: cmd, err: fmt.Errorf("cluster import needs %s, the one the members use", s.both())}
		}
	}
	encKey, err := readKeyFile(&st.keyFile)
	if err != nil {
		return err
	}
	clusterKey, err := readSecretFile(&st.clusterKeyFile, 32)
	if err != nil {
		return &usageError{cmd: cmd, err: err}
	}
	shards, err := strconv.Atoi(st.shards.value)
	if err != nil || shards < 0 || shards > maxShards {
		return &usageError{cmd: cmd, err: fmt.Errorf("invalid %s %s: want a whole number from 0 (Discord's recommendation) to %d",
			st.shards.name(), st.shards.shown(), maxShards)}
	}
	ecfg, err := st.etcdConfig()
	if err != nil {
		return &usageError{cmd: cmd, err: err}
	}
	ctx, stop := signalContext()
	defer stop()
	if err := app.CheckEtcd(ctx, ecfg); err != nil {
		return fmt.Errorf("cluster import: %w", err)
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return fmt.Errorf("cluster import: etcd client: %w", err)
	}
	defer cli.Close()
	return runClusterImport(ctx, importConfig{
		dir:        layout{dir: st.dataDir.value},
		keys:       partition.NewKeys(clusterPrefix),
		encKey:     encKey,
		clusterKey: clusterKey,
		shards:     shards,
		dryRun:     *dry,
		now:        time.Now,
		etcd:       strings.Join(endpoints, ", "),
		log:        zerolog.Nop(),
	}, cli, stdout)
}

// bindOptions defines in fs the flags of opts, with the current values
// as defaults, as settings.bind does for a command's own options.
func bindOptions(st *settings, fs *flag.FlagSet, opts []*option) {
	for _, s := range st.all() {
		if slices.Contains(opts, s.opt) {
			fs.StringVar(&s.value, s.opt.flag, s.value, s.opt.help)
		}
	}
}

// splitEndpoints returns the comma-separated URLs of v.
func splitEndpoints(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// importConfig is what an import needs besides the etcd client.
type importConfig struct {
	dir                layout
	keys               partition.Keys
	encKey, clusterKey []byte
	shards             int
	dryRun             bool
	// now is the wall clock: the members' engines run on it.
	now func() time.Time
	// etcd names the endpoints in messages.
	etcd string
	log  zerolog.Logger
}

// linksExporter is the token store of a data directory as an import
// reads it (badgerlinks.Store).
type linksExporter interface {
	Records(ctx context.Context, fn func(key string, value []byte) error) error
	GrantGen(ctx context.Context) (uint64, error)
}

// importPlan is what an import found: the source's state and what etcd
// already holds of it.
type importPlan struct {
	rules     persistence.Rules
	highWater int64
	accounts  []string // every account with state or jobs, in order
	// present are the accounts etcd holds exactly as the source does
	// (an earlier run of this import wrote them): not written again.
	present map[string]bool
	// resumed counts the accounts etcd holds part of, as an earlier run
	// of this import left them: written again whole.
	resumed   int
	conflicts []string
	waiting   int
	running   int
	done      int

	records   []etcdlinks.Record
	grantGen  uint64
	linkCount etcdlinks.ImportCount
	linksHeld int // link records etcd already holds with the same value

	settings clusterconf.Settings
	stored   bool // the cluster's settings are in etcd
}

// runClusterImport checks that the import is safe, then (unless
// cfg.dryRun) writes the data directory's engine state, rules, links and
// tokens into etcd, and prints what it imported.
func runClusterImport(ctx context.Context, cfg importConfig, cli *clientv3.Client, out io.Writer) error {
	dir := cfg.dir
	if err := dir.checkExisting(); err != nil {
		return fmt.Errorf("cluster import: %w", err)
	}
	hasEngine, hasLinks := exists(dir.engine()), exists(dir.links())
	if !hasEngine && !hasLinks {
		return fmt.Errorf("cluster import: %s holds no engine store nor token store: nothing to import", dir.dir)
	}
	if c, err := net.DialTimeout("unix", dir.control(), time.Second); err == nil {
		c.Close()
		return fmt.Errorf("cluster import: a pinbot is running on %s: stop it, then import", dir.dir)
	}
	if err := checkNoMembers(ctx, cli, cfg.keys); err != nil {
		return err
	}

	var plan importPlan
	var src app.EngineStore
	if hasEngine {
		s, err := openStore(dir.engine(), cfg.log)
		if err != nil {
			return fmt.Errorf("cluster import: %w", err)
		}
		defer s.Close()
		src = s
		if plan.rules, err = s.Rules(ctx); err != nil {
			return fmt.Errorf("cluster import: reading the engine's rules: %w", err)
		}
		if plan.highWater, err = s.HighWater(ctx); err != nil {
			return fmt.Errorf("cluster import: reading the engine's high-water mark: %w", err)
		}
	}
	if hasLinks {
		ls, err := app.OpenTokenStore(dir.links(), cfg.encKey, cfg.log)
		switch {
		case errors.Is(err, links.ErrLocked):
			return fmt.Errorf("cluster import: %s is in use by another pinbot process: stop it, then import", dir.links())
		case errors.Is(err, links.ErrEncryptionKey):
			return fmt.Errorf("cluster import: the token store %s does not open with %s: it must be the key the data directory was run with, and the members' key: %w",
				dir.links(), keyFileOption.env, err)
		case err != nil:
			return fmt.Errorf("cluster import: %w", err)
		}
		defer ls.Close()
		ex, ok := ls.(linksExporter)
		if !ok {
			return errors.New("cluster import: the token store cannot be read whole")
		}
		if err := ex.Records(ctx, func(k string, v []byte) error {
			plan.records = append(plan.records, etcdlinks.Record{Key: k, Value: v})
			return nil
		}); err != nil {
			return fmt.Errorf("cluster import: reading the token store: %w", err)
		}
		if plan.grantGen, err = ex.GrantGen(ctx); err != nil {
			return fmt.Errorf("cluster import: reading the token store: %w", err)
		}
	}

	if err := plan.agreeSettings(ctx, cli, cfg); err != nil {
		return err
	}
	now := cfg.now()
	if ahead := time.Duration(plan.highWater-now.UnixMilli()) * time.Millisecond; ahead > clusterengine.DefaultMaxSkew {
		return fmt.Errorf("cluster import: the data directory's state refers to %s, %v ahead of this machine's clock: "+
			"the members would refuse its partitions; check the clocks, or import after that instant",
			time.UnixMilli(plan.highWater).UTC().Format(time.RFC3339), ahead.Round(time.Second))
	}
	dst, err := etcdstore.Open(ctx, cli, cfg.keys, etcdstore.Options{
		Partitions: plan.settings.Partitions,
		Now:        func() int64 { return cfg.now().UnixMilli() },
	})
	if err != nil {
		return fmt.Errorf("cluster import: %w (etcd at %s)", err, cfg.etcd)
	}
	defer dst.Close()
	merged, err := plan.mergeRules(ctx, dst)
	if err != nil {
		return err
	}
	if src != nil {
		if err := plan.compareEngine(ctx, src, dst); err != nil {
			return err
		}
	}
	var lst *etcdlinks.Store
	held, err := etcdlinks.Exists(ctx, cli, cfg.keys)
	if err != nil {
		return fmt.Errorf("cluster import: %w (etcd at %s)", err, cfg.etcd)
	}
	switch {
	case held || !cfg.dryRun:
		// Open stores the key check of a new links store: a dry run opens
		// only one that exists.
		lst, err = etcdlinks.Open(ctx, cli, cfg.keys, etcdlinks.Options{EncryptionKey: cfg.encKey}, cfg.log)
		if err != nil {
			return fmt.Errorf("cluster import: the links in etcd: %w", err)
		}
		defer lst.Close()
		check, count, err := lst.Compare(ctx, plan.records, now)
		if err != nil {
			return fmt.Errorf("cluster import: %w", err)
		}
		plan.linkCount, plan.linksHeld = count, check.Present
		plan.conflicts = mergeConflicts(plan.conflicts, check.Conflicts)
	default:
		if plan.linkCount, err = etcdlinks.ImportCounts(plan.records, now); err != nil {
			return fmt.Errorf("cluster import: %w", err)
		}
	}
	if n := len(plan.conflicts); n > 0 {
		shown := plan.conflicts[:min(n, importConflictsShown)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		return fmt.Errorf("cluster import: etcd already holds other state or links of %d of the users and accounts being imported: %s%s. "+
			"An import never merges (see pinbot help cluster import): import into a cluster that holds none of them",
			n, strings.Join(shown, ", "), more)
	}

	if cfg.dryRun {
		plan.print(out, cfg, true)
		return nil
	}
	if !plan.stored {
		if _, err := clusterconf.Agree(ctx, cli, cfg.keys, plan.settings); err != nil {
			return fmt.Errorf("cluster import: storing the cluster's settings: %w", err)
		}
	}
	if merged != nil {
		if err := dst.SetRules(ctx, *merged); err != nil {
			return plan.interrupted(cfg, 0, err)
		}
	}
	if src != nil {
		n, err := plan.writeEngine(ctx, src, dst)
		if err != nil {
			return plan.interrupted(cfg, n, err)
		}
	}
	if lst != nil && (len(plan.records) > 0 || plan.grantGen > 0) {
		if _, _, err := lst.Import(ctx, plan.records, plan.grantGen, now); err != nil {
			return plan.interrupted(cfg, len(plan.accounts), err)
		}
	}
	plan.print(out, cfg, false)
	return nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// checkNoMembers fails, naming them, while members are registered in the
// cluster, or partitions are held by a member whose lease has yet to
// expire: an import writes under no fence, and must not race a member.
func checkNoMembers(ctx context.Context, cli *clientv3.Client, keys partition.Keys) error {
	resp, err := cli.Txn(ctx).Then(
		clientv3.OpGet(keys.Members(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(keys.Owners(), clientv3.WithPrefix(), clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return fmt.Errorf("cluster import: reading the cluster's members: %w", err)
	}
	var ids []string
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		ids = append(ids, strings.TrimPrefix(string(kv.Key), keys.Members()))
	}
	if len(ids) > 0 {
		return fmt.Errorf("cluster import: %d cluster members are running (%s): stop every member, then import",
			len(ids), strings.Join(ids, ", "))
	}
	if n := resp.Responses[1].GetResponseRange().GetCount(); n > 0 {
		return fmt.Errorf("cluster import: %d partitions are still held by a stopped member whose lease has yet to expire: try again in a few seconds", n)
	}
	return nil
}

// agreeSettings checks the cluster's stored settings against the data
// directory's rules and the keys, or prepares those a first member would
// store.
func (p *importPlan) agreeSettings(ctx context.Context, cli *clientv3.Client, cfg importConfig) error {
	def := actors.DefaultConfig()
	mine := clusterconf.Settings{
		Partitions:    partition.DefaultCount,
		Limit:         def.Limit,
		Window:        def.Window,
		Lease:         def.Lease,
		Shards:        cfg.shards,
		EncryptionKey: clusterconf.KeyCheck(cfg.encKey, "encryption"),
		ClusterKey:    clusterconf.KeyCheck(cfg.clusterKey, "cluster"),
	}
	if r := p.rules.Current; r.Limit > 0 {
		mine.Limit, mine.Window = r.Limit, time.Duration(r.Window)*time.Millisecond
	}
	if p.rules.Lease > 0 {
		mine.Lease = time.Duration(p.rules.Lease) * time.Millisecond
	}
	s, err := readClusterStatus(ctx, cli, cfg.keys)
	if err != nil {
		return fmt.Errorf("cluster import: %w (etcd at %s)", err, cfg.etcd)
	}
	if !s.stored {
		p.settings = mine
		return nil
	}
	mine.Partitions = s.settings.Partitions
	mine.Shards = 0 // the import opens no gateway shard
	if diffs := clusterconf.Diff(s.settings, mine); len(diffs) > 0 {
		return fmt.Errorf("cluster import: the cluster's settings differ from the data directory's (\"here\"): %s",
			strings.Join(diffs, "; "))
	}
	p.settings, p.stored = s.settings, true
	return nil
}

// mergeRules returns the rules to store in etcd: the data directory's,
// with the earlier rules etcd keeps as well (each binds pins until its
// end, so keeping both never frees a slot early) and the longer lease;
// nil when etcd holds them already. A current rule of etcd's other than
// the data directory's is refused.
func (p *importPlan) mergeRules(ctx context.Context, dst *etcdstore.Store) (*persistence.Rules, error) {
	have, err := dst.Rules(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster import: reading the cluster's rules: %w", err)
	}
	if p.rules.Current.Limit == 0 {
		return nil, nil
	}
	if have.Current.Limit != 0 && have.Current != p.rules.Current {
		return nil, fmt.Errorf("cluster import: etcd keeps the rule of %d pins per %v, the data directory %d pins per %v",
			have.Current.Limit, time.Duration(have.Current.Window)*time.Millisecond,
			p.rules.Current.Limit, time.Duration(p.rules.Current.Window)*time.Millisecond)
	}
	merged := p.rules
	merged.Lease = max(merged.Lease, have.Lease)
	merged.Earlier = slices.Clone(merged.Earlier)
	for _, r := range have.Earlier {
		if !slices.Contains(merged.Earlier, r) {
			merged.Earlier = append(merged.Earlier, r)
		}
	}
	if bytes.Equal(codec.AppendRules(nil, merged), codec.AppendRules(nil, have)) {
		return nil, nil
	}
	return &merged, nil
}

// compareEngine lists the source's accounts and compares each with what
// etcd holds: nothing, exactly or part of what an earlier run of this
// import wrote, or something else (a conflict). It counts the jobs.
func (p *importPlan) compareEngine(ctx context.Context, src, dst persistence.Store) error {
	seen := map[string]bool{}
	add := func(a string) error {
		if !seen[a] {
			seen[a] = true
			p.accounts = append(p.accounts, a)
		}
		return nil
	}
	if err := src.Accounts(ctx, add); err != nil {
		return fmt.Errorf("cluster import: listing the accounts: %w", err)
	}
	if err := src.JobAccounts(ctx, add); err != nil {
		return fmt.Errorf("cluster import: listing the queues: %w", err)
	}
	slices.Sort(p.accounts)
	p.present = map[string]bool{}
	for _, a := range p.accounts {
		sl, sj, err := loadAccount(ctx, src, a)
		if err != nil {
			return fmt.Errorf("cluster import: reading the data directory: %w", err)
		}
		for _, j := range sj {
			switch j.State {
			case persistence.JobWaiting:
				p.waiting++
			case persistence.JobRunning:
				p.running++
			case persistence.JobDone:
				p.done++
			}
		}
		dl, dj, err := loadAccount(ctx, dst, a)
		if err != nil {
			return fmt.Errorf("cluster import: reading etcd: %w", err)
		}
		switch sameAccount(sl, sj, dl, dj) {
		case accountAbsent:
		case accountSame:
			p.present[a] = true
		case accountPart:
			p.resumed++
		default:
			p.conflicts = append(p.conflicts, "account "+a)
		}
	}
	return nil
}

func loadAccount(ctx context.Context, s persistence.Store, account string) (persistence.Loaded, []persistence.Job, error) {
	l, err := s.Load(ctx, account)
	if err != nil {
		return l, nil, err
	}
	j, err := s.Jobs(ctx, account)
	return l, j, err
}

// What etcd holds of an account being imported.
type accountMatch int

const (
	accountAbsent   accountMatch = iota // nothing
	accountSame                         // exactly the source's state and jobs
	accountPart                         // part of them, as an interrupted import leaves it
	accountConflict                     // anything else
)

// sameAccount compares the source's state and jobs of an account with
// etcd's. An import writes an account in parts, in order: the snapshot
// and the first events, the rest of the events, then the jobs; so etcd
// holds part of it when its snapshot is the source's, its events the
// first of the source's, and its jobs some of the source's.
func sameAccount(sl persistence.Loaded, sj []persistence.Job, dl persistence.Loaded, dj []persistence.Job) accountMatch {
	if zeroSnapshot(&dl.Snapshot) && len(dl.Events) == 0 && len(dj) == 0 {
		return accountAbsent
	}
	if !bytes.Equal(codec.AppendSnapshot(nil, &sl.Snapshot), codec.AppendSnapshot(nil, &dl.Snapshot)) ||
		len(dl.Events) > len(sl.Events) {
		return accountConflict
	}
	for i, e := range dl.Events {
		if e != sl.Events[i] {
			return accountConflict
		}
	}
	byID := make(map[uint64]*persistence.Job, len(sj))
	for i := range sj {
		byID[sj[i].ID] = &sj[i]
	}
	for i := range dj {
		s := byID[dj[i].ID]
		if s == nil || !bytes.Equal(codec.AppendJob(nil, s), codec.AppendJob(nil, &dj[i])) {
			return accountConflict
		}
	}
	if len(dl.Events) == len(sl.Events) && len(dj) == len(sj) {
		return accountSame
	}
	return accountPart
}

func zeroSnapshot(s *persistence.Snapshot) bool {
	return s.Seq == 0 && s.NextID == 0 && len(s.Committed) == 0 && len(s.Pending) == 0 &&
		s.HoldUntil == 0 && len(s.Lapsed) == 0 && s.Rebuilt == 0
}

// mergeConflicts returns the sorted union of a and b.
func mergeConflicts(a, b []string) []string {
	all := append(slices.Clone(a), b...)
	slices.Sort(all)
	return slices.Compact(all)
}

// accountParts splits the write of an account's state and jobs into
// parts that each fit in one etcd transaction, in the order
// sameAccount expects: the snapshot with the first events, the other
// events, the jobs. The parts keep no expiry: the engine's next write
// of the account gives its state the expiry it computes.
func accountParts(account string, l persistence.Loaded, jobs []persistence.Job) []persistence.AccountWrite {
	var parts []persistence.AccountWrite
	cur := persistence.AccountWrite{Account: account}
	ops, size := 0, 0
	add := func(n int) {
		if ops > 0 && (ops+1 > importPartOps || size+n > importPartBytes) {
			parts = append(parts, cur)
			cur = persistence.AccountWrite{Account: account}
			ops, size = 0, 0
		}
		ops++
		size += n
	}
	if !zeroSnapshot(&l.Snapshot) {
		snap := l.Snapshot
		cur.Snapshot = &snap
		ops, size = 2, len(codec.AppendSnapshot(nil, &snap)) // its put and the delete of the events it covers
	}
	for _, e := range l.Events {
		add(48)
		cur.Events = append(cur.Events, e)
	}
	for i := range jobs {
		add(len(codec.AppendJob(nil, &jobs[i])) + 64)
		cur.Jobs = append(cur.Jobs, jobs[i])
	}
	if cur.Snapshot != nil || len(cur.Events) > 0 || len(cur.Jobs) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// writeEngine writes every account etcd does not hold already, in
// batches, then the high-water mark; it returns how many accounts were
// written whole before an error.
func (p *importPlan) writeEngine(ctx context.Context, src, dst persistence.Store) (int, error) {
	b := &persistence.Batch{HighWater: p.highWater}
	var inBatch []string // accounts whose last part is in b
	done := 0
	flush := func() error {
		if len(b.Accounts) == 0 {
			return nil
		}
		if err := dst.Write(ctx, b); err != nil {
			return err
		}
		done += len(inBatch)
		b.Accounts, inBatch = b.Accounts[:0], inBatch[:0]
		return nil
	}
	for _, a := range p.accounts {
		if p.present[a] {
			done++
			continue
		}
		l, jobs, err := loadAccount(ctx, src, a)
		if err != nil {
			return done, fmt.Errorf("reading the data directory: %w", err)
		}
		for i, part := range accountParts(a, l, jobs) {
			// One part of an account per write, in order.
			if i > 0 || len(b.Accounts) >= importBatchAccounts {
				if err := flush(); err != nil {
					return done, err
				}
			}
			b.Accounts = append(b.Accounts, part)
		}
		inBatch = append(inBatch, a)
	}
	if err := flush(); err != nil {
		return done, err
	}
	if p.highWater > 0 {
		// The mark of the whole store, beside those of the partitions
		// the accounts' writes raised.
		if err := dst.Write(ctx, &persistence.Batch{HighWater: p.highWater}); err != nil {
			return done, err
		}
	}
	return done, nil
}

// interrupted is the error of an import that failed after writing part
// of the state: running it again completes it.
func (p *importPlan) interrupted(cfg importConfig, accounts int, err error) error {
	return fmt.Errorf("cluster import interrupted with at least %d of %d accounts written (etcd at %s): %w. "+
		"Nothing was deleted from %s. Start no member: run pinbot cluster import again with the same data directory; "+
		"what this import wrote is recognised and the rest is written",
		accounts, len(p.accounts), cfg.etcd, err, cfg.dir.dir)
}

// print writes what the import wrote (or, for a dry run, would write).
func (p *importPlan) print(w io.Writer, cfg importConfig, dry bool) {
	verb := "Imported"
	if dry {
		verb = "Would import"
	}
	st := p.settings
	fmt.Fprintf(w, "%s %s into etcd at %s (prefix %s):\n", verb, cfg.dir.dir, cfg.etcd, cfg.keys.Prefix)
	fmt.Fprintf(w, "  Settings: %d partitions, %d pins per %s, lease %s", st.Partitions, st.Limit, windowNoun(st.Window), st.Lease)
	if p.stored {
		fmt.Fprintln(w, " (the cluster's, the same)")
	} else {
		fmt.Fprintln(w, " (stored for the first member)")
	}
	fmt.Fprintf(w, "  Accounts: %d (pins, reservations and holds), %d already in etcd from an earlier run",
		len(p.accounts), len(p.present))
	if p.resumed > 0 {
		fmt.Fprintf(w, ", %d in part", p.resumed)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  Queued pins: %d waiting, %d running (handed out again as recovered, never sent again), %d done\n",
		p.waiting, p.running, p.done)
	c := p.linkCount
	fmt.Fprintf(w, "  Links: %d accounts linked by %d users, %d tokens, %d servers' settings", c.Accounts, c.Users, c.Tokens, c.Guilds)
	if p.linksHeld > 0 {
		fmt.Fprintf(w, " (%d records already in etcd from an earlier run)", p.linksHeld)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  History: %d pictures pinned, %d accounts' pins made elsewhere, %d digest lines\n",
		c.History, c.Observed, c.Outbox)
	if c.States > 0 {
		fmt.Fprintf(w, "  Not imported: %d links in progress (their users run /link again)\n", c.States)
	}
	if dry {
		fmt.Fprintln(w, "Nothing was written (--dry-run).")
		return
	}
	fmt.Fprintf(w, "Nothing was deleted from %s; keep it until the cluster runs.\n", cfg.dir.dir)
	fmt.Fprintf(w, "Next: start the members with PINBOT_ETCD_ENDPOINTS=%s, the same settings and %s; "+
		"pinbot cluster status shows them.\n", strings.ReplaceAll(cfg.etcd, ", ", ","), keyFileOption.env)
}
