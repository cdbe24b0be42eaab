package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

func shardSessionKey(keys partition.Keys, shard int) string {
	return keys.Gateway() + "sessions/" + fmt.Sprintf("%05d", shard)
}

func identifyKey(keys partition.Keys, bucket int) string {
	return keys.Gateway() + "identify/" + strconv.Itoa(bucket)
}

// ShardCount returns the cluster's gateway shard count: configured when
// not 0 (the cluster's settings agree on it); otherwise the count the
// cluster stored, or, for the first member to ask, recommend's answer
// (Discord's recommendation), stored only if no other member stored one
// meanwhile. Every member of a cluster gets the same count.
func ShardCount(ctx context.Context, cli *clientv3.Client, keys partition.Keys, configured int, recommend func(context.Context) (int, error)) (int, error) {
	if configured > 0 {
		return configured, nil
	}
	key := keys.ShardCount()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("cluster: read the shard count: %w", err)
	}
	if len(resp.Kvs) == 1 {
		return parseCount(resp.Kvs[0].Value)
	}
	n, err := recommend(ctx)
	if err != nil {
		return 0, fmt.Errorf("cluster: the recommended shard count: %w", err)
	}
	if n < 1 || n > MaxShards {
		return 0, fmt.Errorf("cluster: recommended shard count %d out of range [1, %d]", n, MaxShards)
	}
	tr, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, strconv.Itoa(n))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: store the shard count: %w", err)
	}
	if tr.Succeeded {
		return n, nil
	}
	kvs := tr.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return 0, fmt.Errorf("cluster: the stored shard count vanished")
	}
	return parseCount(kvs[0].Value)
}

func parseCount(b []byte) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 1 || n > MaxShards {
		return 0, fmt.Errorf("cluster: stored shard count %q is not a count", b)
	}
	return n, nil
}

// ShardSession is what resumes a gateway shard's session on another
// member: the session, the last sequence received and where to resume.
type ShardSession struct {
	SessionID string `json:"session_id"`
	Sequence  int    `json:"sequence"`
	ResumeURL string `json:"resume_url,omitempty"`
}

// ShardSessions keeps, in etcd, the sessions of the shards handed over,
// for their next owners. It is safe for simultaneous use.
type ShardSessions struct {
	cli  *clientv3.Client
	keys partition.Keys
}

// NewShardSessions returns the sessions of the cluster keys names.
func NewShardSessions(cli *clientv3.Client, keys partition.Keys) *ShardSessions {
	return &ShardSessions{cli: cli, keys: keys}
}

// Put stores shard's session for its next owner.
func (s *ShardSessions) Put(ctx context.Context, shard int, sess ShardSession) error {
	b, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	if _, err := s.cli.Put(ctx, shardSessionKey(s.keys, shard), string(b)); err != nil {
		return fmt.Errorf("cluster: store shard %d's session: %w", shard, err)
	}
	return nil
}

// Checkpoint stores shard's session as its holder sees it now, for the
// next owner to resume if the holder dies: only while the owner key of
// shard has create revision tenure (ShardTenure), so that a member that
// lost the shard cannot overwrite its next holder's checkpoints. False
// (and no error) when the key is no longer that one.
func (s *ShardSessions) Checkpoint(ctx context.Context, shard int, sess ShardSession, tenure int64) (bool, error) {
	b, err := json.Marshal(sess)
	if err != nil {
		return false, err
	}
	tr, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.keys.ShardOwner(shard)), "=", tenure)).
		Then(clientv3.OpPut(shardSessionKey(s.keys, shard), string(b))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("cluster: checkpoint shard %d's session: %w", shard, err)
	}
	return tr.Succeeded, nil
}

// Take returns shard's stored session and deletes it (a session is
// resumed once); false when none is stored.
func (s *ShardSessions) Take(ctx context.Context, shard int) (ShardSession, bool, error) {
	resp, err := s.cli.Delete(ctx, shardSessionKey(s.keys, shard), clientv3.WithPrevKV())
	if err != nil {
		return ShardSession{}, false, fmt.Errorf("cluster: take shard %d's session: %w", shard, err)
	}
	if len(resp.PrevKvs) != 1 {
		return ShardSession{}, false, nil
	}
	var sess ShardSession
	if err := json.Unmarshal(resp.PrevKvs[0].Value, &sess); err != nil || sess.SessionID == "" {
		return ShardSession{}, false, nil // unreadable: identify instead
	}
	return sess, true, nil
}
