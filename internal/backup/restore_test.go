package backup

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// dataDir is a data directory's two stores, open, and an engine on them.
type dataDir struct {
	t      *testing.T
	dir    string
	store  *badgerstore.Store
	links  *badgerlinks.Store
	eng    *actors.Engine
	jobs   chan actors.Job
	closed bool
}

// testLoaders are pinbot's stores, as app.BackupLoaders gives them.
var testLoaders = Loaders{
	Engine: func(dir string, r io.Reader, log zerolog.Logger) error {
		return badgerstore.Restore(dir, r, badgerstore.Options{Durable: true}, log)
	},
	Links: func(dir string, r io.Reader, key []byte, log zerolog.Logger) error {
		return badgerlinks.Restore(dir, r, badgerlinks.Options{EncryptionKey: key}, log)
	},
	OpenEngine: func(dir string, log zerolog.Logger) (persistence.Store, error) {
		return badgerstore.Open(dir, badgerstore.Options{Durable: true}, log)
	},
}

// engineConfig runs the engine on clock, with limit pins per window, the
// default lease, nothing in the background.
func engineConfig(clock actors.Clock, limit int, window time.Duration) actors.Config {
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window = limit, window
	cfg.Clock = clock
	cfg.Recover = false
	cfg.CheckpointEvery = 0
	return cfg
}

// openDataDir opens (creating) the stores of dir and starts an engine
// under cfg whose queued jobs go to a channel.
func openDataDir(t *testing.T, dir string, cfg actors.Config) *dataDir {
	t.Helper()
	d := &dataDir{t: t, dir: dir, jobs: make(chan actors.Job, 1024)}
	var err error
	if d.store, err = badgerstore.Open(filepath.Join(dir, "engine"), badgerstore.Options{MemTableSize: 1 << 20}, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if d.links, err = badgerlinks.Open(filepath.Join(dir, "links"), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	cfg.OnJob = func(j actors.Job) { d.jobs <- j }
	if d.eng, err = actors.New(cfg, d.store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	return d
}

func (d *dataDir) close() {
	if d.closed {
		return
	}
	d.closed = true
	if err := d.eng.Close(context.Background()); err != nil {
		d.t.Errorf("closing the engine: %v", err)
	}
	if err := d.links.Close(); err != nil {
		d.t.Errorf("closing the token store: %v", err)
	}
	if err := d.store.Close(); err != nil {
		d.t.Errorf("closing the engine store: %v", err)
	}
}

// pin reserves up to n slots of account and commits them at once; it
// returns the instants of the pins made.
func (d *dataDir) pin(account string, n int) []time.Time {
	d.t.Helper()
	var made []time.Time
	for len(made) < n {
		g, err := d.eng.Reserve(context.Background(), account, min(n-len(made), actors.MaxBatch))
		if err != nil {
			d.t.Fatalf("Reserve(%s): %v", account, err)
		}
		if g.Granted == 0 {
			break
		}
		for _, r := range g.Reservations() {
			at := d.eng.Now()
			if _, err := d.eng.Commit(context.Background(), r, at); err != nil {
				d.t.Fatalf("Commit: %v", err)
			}
			made = append(made, at)
		}
	}
	return made
}

func (d *dataDir) status(account string) actors.Status {
	d.t.Helper()
	st, err := d.eng.Status(context.Background(), account)
	if err != nil {
		d.t.Fatalf("Status(%s): %v", account, err)
	}
	return st
}

// backup takes a backup of d's stores.
func (d *dataDir) backup() []byte {
	d.t.Helper()
	var buf bytes.Buffer
	if _, err := Take(&buf, Stores{Engine: d.store, Links: d.links, Key: testKey}, true); err != nil {
		d.t.Fatalf("Take: %v", err)
	}
	return buf.Bytes()
}

// restoreInto verifies file and restores it into a new data directory,
// whose engine will run under cfg.
func restoreInto(t *testing.T, file []byte, cfg actors.Config) (string, Result) {
	t.Helper()
	if _, err := Verify(bytes.NewReader(file), testKey); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	dir := t.TempDir()
	res, err := Restore(bytes.NewReader(file), Target{
		EngineDir: filepath.Join(dir, "engine"), LinksDir: filepath.Join(dir, "links"),
		Key: testKey, Engine: cfg, Loaders: testLoaders, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return dir, res
}

func token(id string) *oauth2.Token {
	return &oauth2.Token{AccessToken: "access-" + id, RefreshToken: "refresh-" + id, TokenType: "bearer"}
}

// TestRoundTrip: a populated data directory, backed up and restored into
// an empty one, has the same accounts with the same counts, the same
// links and tokens, and the same jobs, those unfinished coming back as
// recovered.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Minute)
	clock := actors.NewManualClock(t0)
	cfg := engineConfig(clock, 3, time.Hour)
	src := openDataDir(t, t.TempDir(), cfg)
	src.pin("a", 2)
	if g, err := src.eng.Reserve(ctx, "b", 1); err != nil || g.Granted != 1 {
		t.Fatalf("Reserve(b): %+v, %v", g, err)
	}
	src.pin("c", 3)
	if q, err := src.eng.Enqueue(ctx, "c", [][]byte{[]byte("job 1"), []byte("job 2")}); err != nil || len(q.Jobs) != 2 {
		t.Fatalf("Enqueue: %+v, %v", q, err)
	}
	for _, u := range []struct{ user, acct string }{{"u1", "a"}, {"u1", "c"}, {"u2", "a"}} {
		if err := src.links.Link(ctx, u.user, links.Account{ID: u.acct, Username: "user-" + u.acct}, token(u.acct)); err != nil {
			t.Fatal(err)
		}
	}
	file := src.backup()

	clock.Advance(time.Minute)
	dir, res := restoreInto(t, file, cfg)
	if !res.Info.Has(Engine) || !res.Info.Has(Links) || res.Restored.Unfinished != 2 {
		t.Fatalf("Restore = %+v", res)
	}
	dst := openDataDir(t, dir, cfg)

	var want, got []string
	for _, s := range []*badgerstore.Store{src.store, dst.store} {
		var names []string
		if err := s.Accounts(t.Context(), func(a string) error { names = append(names, a); return nil }); err != nil {
			t.Fatal(err)
		}
		want, got = got, names
	}
	if !slices.Equal(got, want) {
		t.Errorf("restored accounts %v, want %v", got, want)
	}
	for _, acct := range []string{"a", "b", "c"} {
		s, r := src.status(acct), dst.status(acct)
		if r.Used != s.Used || r.Pending != s.Pending {
			t.Errorf("%s: restored %d used (%d pending), want %d (%d)", acct, r.Used, r.Pending, s.Used, s.Pending)
		}
	}
	for _, u := range []string{"u1", "u2"} {
		s, _ := src.links.User(ctx, u)
		r, err := dst.links.User(ctx, u)
		if err != nil || r.Active != s.Active || !slices.Equal(r.Accounts, s.Accounts) {
			t.Errorf("restored user %s: %+v, %v; want %+v", u, r, err, s)
		}
	}
	for _, acct := range []string{"a", "c"} {
		tok, _, err := dst.links.Grant(ctx, acct)
		if err != nil || tok.RefreshToken != "refresh-"+acct {
			t.Errorf("restored token of %s: %+v, %v", acct, tok, err)
		}
	}
	for range 2 {
		select {
		case j := <-dst.jobs:
			if !j.Recovered || j.Account != "c" {
				t.Fatalf("job %+v handed out, want a recovered job of c", j)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the restored jobs were not handed out")
		}
	}
	srcJobs, _, _ := src.eng.Jobs(ctx, "c")
	dstJobs, _, _ := dst.eng.Jobs(ctx, "c")
	if len(dstJobs) != len(srcJobs) {
		t.Fatalf("restored %d jobs, want %d", len(dstJobs), len(srcJobs))
	}
	for i := range srcJobs {
		if dstJobs[i].ID != srcJobs[i].ID || !bytes.Equal(dstJobs[i].Payload, srcJobs[i].Payload) || dstJobs[i].State != actors.JobRunning {
			t.Errorf("restored job %+v, want %+v running", dstJobs[i], srcJobs[i])
		}
	}
}

// TestRestoreNeverFreesEarly: a backup taken at T0, pins made after it
// (on accounts it holds and on one it does not, and reservations whose
// outcome stayed unknown when the process stopped), then the backup
// restored and the engine asked for every slot it will grant, minute by
// minute, for three windows. Pinterest's own count, which holds every pin
// made, before and after the backup and after the restore, never exceeds
// the limit in any window. And the engine does grant again once the pins
// before the restore have all left their window.
func TestRestoreNeverFreesEarly(t *testing.T) {
	const limit = 10
	const window = time.Hour
	lease := actors.DefaultConfig().Lease
	t0 := time.Now().Truncate(time.Minute)
	clock := actors.NewManualClock(t0)
	cfg := engineConfig(clock, limit, window)
	pinterest := map[string][]time.Time{} // every pin made, by account
	made := func(acct string, at ...time.Time) { pinterest[acct] = append(pinterest[acct], at...) }

	src := openDataDir(t, t.TempDir(), cfg)
	made("a", src.pin("a", 4)...)
	made("b", src.pin("b", 2)...)
	file := src.backup() // T0

	clock.Advance(10 * time.Minute)
	made("a", src.pin("a", limit)...) // 6: a is full
	made("b", src.pin("b", limit)...) // 8
	made("c", src.pin("c", limit)...) // an account the backup does not hold
	clock.Advance(18 * time.Minute)
	if g, err := src.eng.Reserve(context.Background(), "d", limit); err != nil || g.Granted != limit {
		t.Fatalf("Reserve(d): %+v, %v", g, err)
	}
	// The process stops with d's requests in flight; Pinterest creates
	// the pins at the latest instant it may, a minute before the lease
	// ends: after the restore.
	for range limit {
		made("d", time.UnixMilli(clock.Now()).Add(lease-time.Minute))
	}
	src.close()

	clock.Advance(2 * time.Minute) // the restore, at T0+30m
	dir, res := restoreInto(t, file, cfg)
	if want := time.UnixMilli(clock.Now()).Add(lease + window); !res.Restored.HoldUntil.Equal(want) {
		t.Fatalf("held until %v, want %v", res.Restored.HoldUntil, want)
	}
	dst := openDataDir(t, dir, cfg)
	granted := 0
	for range 3 * 60 {
		for _, acct := range []string{"a", "b", "c", "d", "e"} {
			pins := dst.pin(acct, limit)
			granted += len(pins)
			made(acct, pins...)
		}
		clock.Advance(time.Minute)
	}
	for acct, pins := range pinterest {
		slices.SortFunc(pins, func(x, y time.Time) int { return x.Compare(y) })
		for i, p := range pins {
			in := 0
			for _, q := range pins[:i+1] {
				if q.After(p.Add(-window)) {
					in++
				}
			}
			if in > limit {
				t.Fatalf("%s: Pinterest counts %d pins in the window ending %v (+%v): more than %d",
					acct, in, p, p.Sub(t0), limit)
			}
		}
	}
	if granted < 5*limit {
		t.Fatalf("the restored engine granted %d pins in three windows, want at least %d", granted, 5*limit)
	}
}

// TestRestoreHoldsByTheBackupRule: the hold lasts the window the backup's
// engine ran under plus a lease when the next runs' window is not known
// (BackupRule), however long the configuration's default; a window given
// holds longer when it is longer, and never shorter than the backup's
// own rule needs.
func TestRestoreHoldsByTheBackupRule(t *testing.T) {
	const ran = 30 * time.Minute // the backup's window
	clock := actors.NewManualClock(time.Now().Truncate(time.Minute))
	src := openDataDir(t, t.TempDir(), engineConfig(clock, 2, ran))
	src.pin("a", 2)
	file := src.backup()
	src.close()
	clock.Advance(time.Minute)

	lease := actors.DefaultConfig().Lease
	for _, tt := range []struct {
		name       string
		window     time.Duration // of the configuration given
		backupRule bool
		hold       time.Duration
		sizedFor   time.Duration // Result.Window
	}{
		{"the backup's rule, not the default's", actors.DefaultWindow, true, ran + lease, ran},
		{"a longer window given", 2 * time.Hour, false, 2*time.Hour + lease, 2 * time.Hour},
		{"a shorter window given", 10 * time.Minute, false, ran + lease, 10 * time.Minute},
	} {
		cfg := engineConfig(clock, 100, tt.window)
		dir := t.TempDir()
		res, err := Restore(bytes.NewReader(file), Target{
			EngineDir: filepath.Join(dir, "engine"), LinksDir: filepath.Join(dir, "links"),
			Key: testKey, Engine: cfg, BackupRule: tt.backupRule, Loaders: testLoaders, Log: zerolog.Nop(),
		})
		if err != nil {
			t.Fatalf("%s: Restore: %v", tt.name, err)
		}
		if got := res.Restored.HoldUntil.Sub(res.Restored.At); got != tt.hold {
			t.Errorf("%s: held for %v, want %v", tt.name, got, tt.hold)
		}
		if res.Window != tt.sizedFor {
			t.Errorf("%s: Result.Window %v, want %v", tt.name, res.Window, tt.sizedFor)
		}
		// The engine that runs next on it grants nothing before the hold
		// ends, and grants at its end.
		dst := openDataDir(t, dir, engineConfig(clock, 2, ran))
		if got := dst.pin("b", 1); len(got) != 0 {
			t.Errorf("%s: granted %d pins during the hold", tt.name, len(got))
		}
		clock.Advance(tt.hold)
		if got := dst.pin("b", 1); len(got) != 1 {
			t.Errorf("%s: granted %d pins at the hold's end, want 1", tt.name, len(got))
		}
		dst.close()
	}
}
