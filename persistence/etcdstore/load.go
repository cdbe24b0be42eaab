package etcdstore

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Load returns the stored state of account, read at one revision: its
// snapshot and the journal events after it, those whose expiry passed
// left out even while their lease has yet to delete them.
func (s *Store) Load(ctx context.Context, account string) (persistence.Loaded, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return persistence.Loaded{}, err
	}
	if err := s.enter(ctx); err != nil {
		return persistence.Loaded{}, err
	}
	defer s.life.Exit()
	p := s.partitionOf(account)
	prefix := s.l.account(p, account)
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return persistence.Loaded{}, s.etcdError(fmt.Sprintf("load %q", account), err)
	}
	now := s.now()
	corrupt := func(what string, err error) error {
		return fmt.Errorf("etcdstore: account %q: %s: %w", account, what, err)
	}
	var l persistence.Loaded
	for _, kv := range resp.Kvs {
		rest := string(kv.Key[len(prefix):])
		exp, body, err := unwrap(kv.Value)
		switch {
		case rest == snapName:
			if err != nil {
				return persistence.Loaded{}, corrupt("snapshot", err)
			}
			if expired(exp, now) {
				continue
			}
			if l.Snapshot, err = codec.DecodeSnapshot(body); err != nil {
				return persistence.Loaded{}, corrupt("snapshot", err)
			}
		case strings.HasPrefix(rest, eventsDir):
			seq, ok := parseNum(rest[len(eventsDir):])
			if !ok {
				return persistence.Loaded{}, corrupt(fmt.Sprintf("journal key %q", kv.Key), codec.Corrupt("malformed key"))
			}
			if err != nil {
				return persistence.Loaded{}, corrupt(fmt.Sprintf("journal seq %d", seq), err)
			}
			if expired(exp, now) {
				continue
			}
			ev, err := codec.DecodeEvent(body)
			if err == nil && ev.Seq != seq {
				err = codec.Corrupt(fmt.Sprintf("event of seq %d stored under seq %d", ev.Seq, seq))
			}
			if err != nil {
				return persistence.Loaded{}, corrupt(fmt.Sprintf("journal seq %d", seq), err)
			}
			l.Events = append(l.Events, ev)
		default:
			return persistence.Loaded{}, corrupt(fmt.Sprintf("key %q", kv.Key), codec.Corrupt("unknown key"))
		}
	}
	// Events sort by seq in key order; those a snapshot supersedes are
	// deleted when it is written, and hidden here should one remain.
	k := 0
	for k < len(l.Events) && l.Events[k].Seq <= l.Snapshot.Seq {
		k++
	}
	if k == len(l.Events) {
		l.Events = nil
	} else {
		l.Events = l.Events[k:]
	}
	return l, nil
}

// Jobs returns account's jobs, ascending by ID, read at one revision;
// those whose expiry passed are left out even while their lease has yet
// to delete them.
func (s *Store) Jobs(ctx context.Context, account string) ([]persistence.Job, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.life.Exit()
	p := s.partitionOf(account)
	prefix := s.l.jobs(p, account)
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, s.etcdError(fmt.Sprintf("jobs of %q", account), err)
	}
	now := s.now()
	var jobs []persistence.Job
	for _, kv := range resp.Kvs {
		id, ok := parseNum(string(kv.Key[len(prefix):]))
		if !ok {
			return nil, fmt.Errorf("etcdstore: account %q: job key %q: %w", account, kv.Key, codec.Corrupt("malformed key"))
		}
		exp, body, err := unwrap(kv.Value)
		if err == nil && expired(exp, now) {
			continue
		}
		var j persistence.Job
		if err == nil {
			j, err = codec.DecodeJob(body)
		}
		if err == nil && j.ID != id {
			err = codec.Corrupt(fmt.Sprintf("job %d stored under id %d", j.ID, id))
		}
		if err != nil {
			return nil, fmt.Errorf("etcdstore: account %q: job %d: %w", account, id, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}
