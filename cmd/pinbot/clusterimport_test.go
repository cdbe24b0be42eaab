package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/links/etcdlinks"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/clusterengine"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/etcdstore"
)

// The rule of the data directories the import tests build.
const (
	importLimit  = 3
	importWindow = 2 * time.Hour
)

// importOldFree is how long after the data directory was made the pins
// of account "old" leave their window, making its queued pins due.
const importOldFree = 8 * time.Second

// importSource is a data directory built by running the engine, and what
// it holds.
type importSource struct {
	dir      string
	keyFile  string
	key      []byte
	made     time.Time // the engine time of its last writes
	grantGen uint64
}

// importData runs the engine on a new data directory under 3 pins per 2
// hours, its clock ending at the wall clock's now: account "old" made 3
// pins that leave the window importOldFree later and queued 2 more
// (waiting); "full" is at its limit, "below" made 1 pin, "pending" holds
// a reservation not yet resolved, "held" is held for an hour, "run" has
// a queued pin handed out and never finished (running). extra accounts
// "acct-N" make a pin each. Users 801 and 802 link account "full", 803
// links "below"; "full" remembers a picture pinned.
func importData(t *testing.T, extra int) importSource {
	t.Helper()
	ctx := context.Background()
	src := importSource{dir: t.TempDir(), key: bytes.Repeat([]byte{0x42}, 32)}
	l := layout{dir: src.dir}
	src.keyFile = filepath.Join(t.TempDir(), "pinbot.key")
	if err := os.WriteFile(src.keyFile, src.key, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := actors.NewManualClock(now.Add(-importWindow + importOldFree))
	store, err := openStore(l.engine(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan actors.Job, 4)
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Recover, cfg.Limit, cfg.Window = clock, false, importLimit, importWindow
	cfg.OnJob = func(j actors.Job) { started <- j }
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pin := func(account string, n int, commit bool) {
		t.Helper()
		g, err := eng.Reserve(ctx, account, n)
		if err != nil || g.Granted != n {
			t.Fatalf("Reserve(%s, %d): %+v, %v", account, n, g, err)
		}
		if !commit {
			return
		}
		for _, r := range g.Reservations() {
			if _, err := eng.Commit(ctx, r, eng.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	pin("old", 3, true)
	if q, err := eng.Enqueue(ctx, "old", [][]byte{[]byte(queuedPayload), []byte(queuedPayload)}); err != nil || len(q.Jobs) != 2 {
		t.Fatalf("Enqueue(old): %+v, %v", q, err)
	}
	clock.Advance(now.Sub(time.UnixMilli(clock.Now())))
	src.made = time.UnixMilli(clock.Now())
	pin("full", 3, true)
	pin("below", 1, true)
	pin("pending", 1, false)
	if _, err := eng.Hold(ctx, "held", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, "run", [][]byte{[]byte(queuedPayload)}); err != nil {
		t.Fatal(err)
	}
	if j := <-started; j.Account != "run" {
		t.Fatalf("job handed out: %+v, want run's", j)
	}
	for i := range extra {
		pin(fmt.Sprintf("acct-%03d", i), 1, true)
	}
	if err := shutdown(eng, store); err != nil {
		t.Fatal(err)
	}

	ls, err := badgerlinks.Open(l.links(), badgerlinks.Options{EncryptionKey: src.key}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"801", "802"} {
		if err := ls.Link(ctx, u, links.Account{ID: "full", Username: "alice_art"}, &oauth2.Token{AccessToken: "at-full", RefreshToken: "rt-full"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ls.Link(ctx, "803", links.Account{ID: "below", Username: "bob"}, &oauth2.Token{AccessToken: "at-below", RefreshToken: "rt-below"}); err != nil {
		t.Fatal(err)
	}
	if err := ls.RememberPinned(ctx, "full", "b1", []links.PinnedPicture{{Key: "pic1", PinURL: "https://www.pinterest.com/pin/1/", Until: now.Add(90 * 24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.NewState(ctx, "804", now); err != nil {
		t.Fatal(err)
	}
	if src.grantGen, err = ls.GrantGen(ctx); err != nil || src.grantGen == 0 {
		t.Fatalf("GrantGen: %d, %v", src.grantGen, err)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	return src
}

// importKeys writes a cluster key and returns its file and bytes.
func importClusterKey(t *testing.T) (string, []byte) {
	t.Helper()
	key := bytes.Repeat([]byte{0x17}, 32)
	path := filepath.Join(t.TempDir(), "cluster.key")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, key
}

// importConf is the configuration of an import of src under prefix.
func importConf(src importSource, prefix string, clusterKey []byte) importConfig {
	return importConfig{
		dir: layout{dir: src.dir}, keys: partition.NewKeys(prefix),
		encKey: src.key, clusterKey: clusterKey, now: time.Now, etcd: "test", log: zerolog.Nop(),
	}
}

// etcdKeys counts the keys under prefix.
func etcdKeys(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// sourceStatus returns the status of each account in the data directory
// at the wall clock's now, as the single process would answer.
func sourceStatus(t *testing.T, dir string, accounts []string) map[string]actors.Status {
	t.Helper()
	out := map[string]actors.Status{}
	clock := actors.NewManualClock(time.Now())
	store, err := openStore(layout{dir: dir}.engine(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Recover, cfg.Limit, cfg.Window = clock, false, importLimit, importWindow
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		st, err := eng.Peek(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		out[a] = st
	}
	if err := shutdown(eng, store); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterImport imports a data directory the engine made into etcd
// (a dry run first, which writes nothing; a second run, which finds it
// all there), then runs a cluster engine on that etcd: every account
// counts what the single process counted, none is granted past its
// limit, the queued pins run when due, the running one comes back
// recovered, and the links and tokens read back.
func TestClusterImport(t *testing.T) {
	t.Parallel()
	src := importData(t, 0)
	etcd := etcdtest.Start(t, 1)
	cli := etcd.Client()
	ckFile, ck := importClusterKey(t)
	env := map[string]string{
		"PINBOT_ETCD_ENDPOINTS":      strings.Join(etcd.Endpoints(), ","),
		"PINBOT_DATA_DIR":            src.dir,
		"PINBOT_ENCRYPTION_KEY_FILE": src.keyFile,
		"PINBOT_CLUSTER_KEY_FILE":    ckFile,
	}

	r := pinbot(t, "", env, "cluster", "import", "--dry-run")
	r.wantCode(t, "cluster import --dry-run", exitOK)
	t.Logf("dry run:\n%s", r.stdout)
	for _, want := range []string{
		"Would import", "Accounts: 6 ", "Queued pins: 2 waiting, 1 running", "Links: 2 accounts linked by 3 users, 2 tokens",
		"History: 1 pictures pinned", "Not imported: 1 links in progress", "Nothing was written (--dry-run).",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := etcdKeys(t, cli, clusterPrefix); n != 0 {
		t.Fatalf("the dry run wrote %d keys", n)
	}

	r = pinbot(t, "", env, "cluster", "import")
	r.wantCode(t, "cluster import", exitOK)
	t.Logf("import:\n%s", r.stdout)
	for _, want := range []string{"Imported", "Accounts: 6 (pins, reservations and holds), 0 already", "(stored for the first member)", "Next: start the members"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import lacks %q:\n%s", want, r.stdout)
		}
	}
	r = pinbot(t, "", env, "cluster", "import")
	r.wantCode(t, "cluster import again", exitOK)
	if !strings.Contains(r.stdout, "6 already in etcd") || !strings.Contains(r.stdout, "(the cluster's, the same)") {
		t.Errorf("a second import does not find the first's:\n%s", r.stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keys := partition.NewKeys(clusterPrefix)
	settings, err := clusterconf.Agree(ctx, cli, keys, clusterconf.Settings{
		Partitions: partition.DefaultCount, Limit: importLimit, Window: importWindow, Lease: actors.DefaultConfig().Lease,
		EncryptionKey: clusterconf.KeyCheck(src.key, "encryption"), ClusterKey: clusterconf.KeyCheck(ck, "cluster"),
	})
	if err != nil {
		t.Fatalf("a member with the data directory's settings: %v", err)
	}

	accounts := []string{"full", "below", "pending", "held", "run"}
	// What each may be granted: its limit less the pins and
	// reservations that count; nothing while held.
	grants := map[string]int{"full": 0, "below": 2, "pending": 2, "held": 0, "run": 2}
	want := sourceStatus(t, src.dir, accounts)
	jobs := make(chan actors.Job, 8)
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = importLimit, importWindow
	ecfg.OnJob = func(j actors.Job) { jobs <- j }
	node, err := clusterengine.Start(ctx, clusterengine.Config{
		Client: cli, Keys: keys, Partitions: settings.Partitions,
		Member: cluster.Config{Member: "m1", Addr: "m1:0", LeaseTTL: 2 * time.Second, Log: zerolog.Nop()},
		Engine: ecfg, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(context.Background())
	for _, a := range append(accounts, "old") {
		for !node.Serves(a) {
			if ctx.Err() != nil {
				t.Fatalf("account %s not served", a)
			}
			time.Sleep(10 * time.Millisecond) // ownership settles through etcd's watches
		}
	}
	for _, a := range accounts {
		got, err := node.Engine.Peek(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		w := want[a]
		if got.Used != w.Used || got.Pending != w.Pending || got.Free() != w.Free() {
			t.Errorf("account %s in the cluster: used %d, pending %d, free %d; the single process: %d, %d, %d",
				a, got.Used, got.Pending, got.Free(), w.Used, w.Pending, w.Free())
		}
		g, err := node.Engine.Reserve(ctx, a, importLimit)
		if err != nil {
			t.Fatal(err)
		}
		if g.Granted != grants[a] {
			t.Errorf("account %s: granted %d of %d asked, want %d (the single process: %d used, %d pending)",
				a, g.Granted, importLimit, grants[a], w.Used, w.Pending)
		}
	}

	// The running pin comes back recovered; the waiting ones of "old"
	// run once its pins leave the window.
	var recovered, ran int
	for recovered+ran < 3 {
		select {
		case j := <-jobs:
			switch {
			case j.Account == "run" && j.Recovered:
				recovered++
			case j.Account == "old" && !j.Recovered:
				ran++
			default:
				t.Fatalf("unexpected job %+v", j)
			}
		case <-ctx.Done():
			t.Fatalf("%d recovered, %d run of 1 and 2", recovered, ran)
		}
	}

	ls, err := etcdlinks.Open(ctx, cli, keys, etcdlinks.Options{EncryptionKey: src.key}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	acct, users, err := ls.AccountUsers(ctx, "full")
	if err != nil || acct.Username != "alice_art" || strings.Join(users, ",") != "801,802" {
		t.Fatalf("AccountUsers(full): %+v, %v, %v", acct, users, err)
	}
	tok, gen, err := ls.Grant(ctx, "below")
	if err != nil || tok.RefreshToken != "rt-below" || gen == 0 || gen > src.grantGen {
		t.Fatalf("Grant(below): %+v, %d, %v", tok, gen, err)
	}
	u, err := ls.User(ctx, "801")
	if err != nil || u.Active != "full" {
		t.Fatalf("User(801): %+v, %v", u, err)
	}
	pinned, err := ls.PinnedBefore(ctx, "full", "b1", []string{"pic1"}, time.Now())
	if err != nil || pinned["pic1"] != "https://www.pinterest.com/pin/1/" {
		t.Fatalf("PinnedBefore: %v, %v", pinned, err)
	}
	if err := ls.Link(ctx, "805", links.Account{ID: "new", Username: "carol"}, &oauth2.Token{AccessToken: "a", RefreshToken: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, g, err := ls.Grant(ctx, "new"); err != nil || g <= src.grantGen {
		t.Fatalf("a link after the import has generation %d (%v), want above the imported %d", g, err, src.grantGen)
	}
}

// TestClusterImportRefuses: a live member, a data directory in use,
// settings that differ and state etcd already holds each stop the
// import, named, before it writes anything.
func TestClusterImportRefuses(t *testing.T) {
	t.Parallel()
	src := importData(t, 0)
	etcd := etcdtest.Start(t, 1)
	cli := etcd.Client()
	_, ck := importClusterKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer

	refused := func(what, prefix string, wants ...string) {
		t.Helper()
		before := etcdKeys(t, cli, prefix)
		err := runClusterImport(ctx, importConf(src, prefix, ck), cli, &out)
		if err == nil {
			t.Fatalf("%s: imported", what)
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", what, err, w)
			}
		}
		if after := etcdKeys(t, cli, prefix); after != before {
			t.Errorf("%s: the refused import wrote %d keys", what, after-before)
		}
	}

	t.Run("live member", func(t *testing.T) {
		keys := partition.NewKeys("/members/")
		if _, err := cli.Put(ctx, keys.Member("m7"), `{"addr":"m7:7946"}`); err != nil {
			t.Fatal(err)
		}
		refused("a live member", "/members/", "1 cluster members are running (m7)")
	})

	t.Run("data directory in use", func(t *testing.T) {
		release, err := lockDir(layout{dir: src.dir}.engine())
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		refused("a locked data directory", "/locked/", "in use by another pinbot process")
	})

	t.Run("settings differ", func(t *testing.T) {
		keys := partition.NewKeys("/settings/")
		if _, err := clusterconf.Agree(ctx, cli, keys, clusterconf.Settings{
			Partitions: 16, Limit: 5, Window: time.Hour, Lease: actors.DefaultConfig().Lease,
			EncryptionKey: clusterconf.KeyCheck(src.key, "encryption"), ClusterKey: clusterconf.KeyCheck([]byte("other"), "cluster"),
		}); err != nil {
			t.Fatal(err)
		}
		refused("other settings", "/settings/",
			"pin limit is 5 in the cluster, 3 here", "pin window is 1h0m0s in the cluster, 2h0m0s here", "the cluster key differs")
	})

	t.Run("state in etcd", func(t *testing.T) {
		keys := partition.NewKeys("/held/")
		st, err := etcdstore.Open(ctx, cli, keys, etcdstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Write(ctx, &persistence.Batch{Accounts: []persistence.AccountWrite{
			{Account: "full", Events: []persistence.Event{{Seq: 1, ID: 1, At: time.Now().UnixMilli(), Deadline: time.Now().UnixMilli() + 1000, Count: 1, Kind: persistence.EventReserve}}},
			{Account: "below", Events: []persistence.Event{{Seq: 1, ID: 1, At: time.Now().UnixMilli(), Deadline: time.Now().UnixMilli() + 1000, Count: 1, Kind: persistence.EventReserve}}},
		}}); err != nil {
			t.Fatal(err)
		}
		ls, err := etcdlinks.Open(ctx, cli, keys, etcdlinks.Options{EncryptionKey: src.key}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		if err := ls.Link(ctx, "803", links.Account{ID: "other", Username: "x"}, &oauth2.Token{AccessToken: "a", RefreshToken: "r"}); err != nil {
			t.Fatal(err)
		}
		refused("state in etcd", "/held/", "3 of the users and accounts being imported: account below, account full, user 803", "never merges")
	})
}

// faultyKV fails every transaction that writes once writes transactions
// have committed: etcd lost in the middle of an import.
type faultyKV struct {
	clientv3.KV
	writes *atomic.Int64
}

func (f faultyKV) Txn(ctx context.Context) clientv3.Txn {
	return &faultyTxn{Txn: f.KV.Txn(ctx), writes: f.writes}
}

type faultyTxn struct {
	clientv3.Txn
	writes *atomic.Int64
	put    bool
}

func (t *faultyTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }

func (t *faultyTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.put = t.put || op.IsPut()
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *faultyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *faultyTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.put && t.writes.Add(-1) < 0 {
		return nil, errors.New("injected fault: etcd unreachable")
	}
	return t.Txn.Commit()
}

// TestClusterImportInterrupted: etcd lost midway stops the import with
// an error that says what to do; running it again completes it, and etcd
// then holds every account as the data directory does.
func TestClusterImportInterrupted(t *testing.T) {
	t.Parallel()
	src := importData(t, 200)
	etcd := etcdtest.Start(t, 1)
	_, ck := importClusterKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	healthy := cli.KV
	var writes atomic.Int64
	writes.Store(4) // the settings, the rules and a few of the accounts' transactions
	cli.KV = faultyKV{KV: healthy, writes: &writes}
	conf := importConf(src, "/pinbot/", ck)
	var out bytes.Buffer
	err = runClusterImport(ctx, conf, cli, &out)
	if err == nil || !strings.Contains(err.Error(), "cluster import interrupted") || !strings.Contains(err.Error(), "run pinbot cluster import again") {
		t.Fatalf("import with etcd lost midway: %v", err)
	}
	t.Logf("interrupted: %v", err)

	cli.KV = healthy
	st, err := etcdstore.Open(ctx, cli, conf.keys, etcdstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := 0
	if err := st.Accounts(ctx, func(string) error { stored++; return nil }); err != nil {
		t.Fatal(err)
	}
	if stored == 0 || stored >= 206 {
		t.Fatalf("%d accounts stored by the interrupted import: want some, not all", stored)
	}

	out.Reset()
	if err := runClusterImport(ctx, conf, cli, &out); err != nil {
		t.Fatalf("the import run again: %v", err)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d already in etcd", stored)) {
		t.Errorf("the second run does not count the %d accounts of the first:\n%s", stored, out.String())
	}
	source, err := openStore(layout{dir: src.dir}.engine(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer source.Close()
	n := 0
	if err := source.Accounts(ctx, func(a string) error {
		n++
		sl, sj, err := loadAccount(ctx, source, a)
		if err != nil {
			return err
		}
		dl, dj, err := loadAccount(ctx, st, a)
		if err != nil {
			return err
		}
		if m := sameAccount(sl, sj, dl, dj); m != accountSame {
			t.Errorf("account %s in etcd: %v, want the data directory's", a, m)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 206 {
		t.Fatalf("%d accounts in the data directory, want 206", n)
	}
	hw, err := st.HighWater(ctx)
	if err != nil || hw < src.made.UnixMilli() {
		t.Fatalf("high-water mark in etcd %d (%v), want at least %d", hw, err, src.made.UnixMilli())
	}
}

// TestClusterImportUsage: the help names the flags, and a missing
// setting is a usage error that names it.
func TestClusterImportUsage(t *testing.T) {
	t.Parallel()
	r := pinbot(t, "", nil, "cluster", "import", "--help")
	r.wantCode(t, "cluster import --help", exitOK)
	for _, want := range []string{"pinbot cluster import [flags]", "--dry-run", "--data-dir DIR", "--cluster-key-file FILE", "never\nmerges"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	r = pinbot(t, "", nil, "cluster", "import")
	r.wantCode(t, "cluster import without etcd", exitUsage)
	if !strings.Contains(r.stderr, "PINBOT_ETCD_ENDPOINTS (or --etcd-endpoints)") {
		t.Errorf("stderr: %s", r.stderr)
	}
	r = pinbot(t, "", map[string]string{"PINBOT_ETCD_ENDPOINTS": "http://127.0.0.1:1", "PINBOT_ENCRYPTION_KEY_FILE": "k"}, "cluster", "import")
	r.wantCode(t, "cluster import without a cluster key", exitUsage)
	if !strings.Contains(r.stderr, "PINBOT_CLUSTER_KEY_FILE (or --cluster-key-file)") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
