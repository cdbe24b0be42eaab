// Package clusterconf keeps the settings every member of a pinbot cluster
// must share: the first member to start stores its own in etcd, and a
// member whose settings differ refuses to start, naming each difference.
// Two members that disagreed on the limit, the window or the partition
// count would each keep a promise the other breaks.
package clusterconf

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pinbot/pinbot/internal/partition"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Settings are what the members of one cluster must agree on.
type Settings struct {
	Partitions int           `json:"partitions"`
	Limit      int           `json:"limit"`
	Window     time.Duration `json:"window"`
	Lease      time.Duration `json:"lease"`
	// Shards is the gateway's shard count; 0 in a member's own settings
	// means "whatever the cluster stored" (the first member resolves
	// Discord's recommendation and stores the number).
	Shards int `json:"shards"`
	// EncryptionKey and ClusterKey are checks of the keys (KeyCheck),
	// never the keys: a member with another key could read nothing the
	// others sealed, nor talk to them.
	EncryptionKey string `json:"encryption_key"`
	ClusterKey    string `json:"cluster_key"`
}

// KeyCheck returns a check of key that reveals nothing of it: HMAC-SHA256
// keyed with it over a fixed label, as hex.
func KeyCheck(key []byte, label string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("pinbot cluster key check: " + label))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrMismatch is wrapped by the error of Agree when the member's settings
// differ from the cluster's.
var ErrMismatch = errors.New("clusterconf: settings differ from the cluster's")

// Agree stores mine as the cluster's settings when none are stored (in one
// transaction: of several first members, one wins), and otherwise compares
// mine with the stored ones. It returns the cluster's settings (mine with
// Shards taken from the cluster's when mine has 0), or an error wrapping
// ErrMismatch that names every setting that differs and both values (keys
// by name only).
func Agree(ctx context.Context, cli *clientv3.Client, keys partition.Keys, mine Settings) (Settings, error) {
	if err := mine.validate(); err != nil {
		return Settings{}, err
	}
	val, err := json.Marshal(mine)
	if err != nil {
		return Settings{}, err
	}
	key := keys.Settings()
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return Settings{}, fmt.Errorf("clusterconf: reading the cluster's settings from etcd: %w", err)
	}
	if resp.Succeeded {
		return mine, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return Settings{}, fmt.Errorf("clusterconf: the cluster's settings vanished from %s", key)
	}
	var stored Settings
	if err := json.Unmarshal(kvs[0].Value, &stored); err != nil {
		return Settings{}, fmt.Errorf("clusterconf: the cluster's settings at %s are unreadable: %w", key, err)
	}
	if diffs := Diff(stored, mine); len(diffs) > 0 {
		return Settings{}, fmt.Errorf("%w: %s", ErrMismatch, strings.Join(diffs, "; "))
	}
	if mine.Shards == 0 {
		mine.Shards = stored.Shards
	}
	return mine, nil
}

// Diff describes each setting of mine that differs from the cluster's.
func Diff(cluster, mine Settings) []string {
	var d []string
	num := func(name string, c, m any) {
		if c != m {
			d = append(d, fmt.Sprintf("%s is %v in the cluster, %v here", name, c, m))
		}
	}
	num("partition count", cluster.Partitions, mine.Partitions)
	num("pin limit", cluster.Limit, mine.Limit)
	num("pin window", cluster.Window, mine.Window)
	num("reservation lease", cluster.Lease, mine.Lease)
	if mine.Shards != 0 {
		num("shard count", cluster.Shards, mine.Shards)
	}
	if cluster.EncryptionKey != mine.EncryptionKey {
		d = append(d, "the encryption key differs from the cluster's")
	}
	if cluster.ClusterKey != mine.ClusterKey {
		d = append(d, "the cluster key differs from the cluster's")
	}
	return d
}

func (s Settings) validate() error {
	switch {
	case s.Partitions < 1 || s.Partitions > partition.MaxCount:
		return fmt.Errorf("clusterconf: partition count %d not in [1, %d]", s.Partitions, partition.MaxCount)
	case s.Limit < 1:
		return fmt.Errorf("clusterconf: pin limit %d", s.Limit)
	case s.Window <= 0 || s.Lease <= 0:
		return fmt.Errorf("clusterconf: window %v, lease %v: both must be positive", s.Window, s.Lease)
	case s.Shards < 0:
		return fmt.Errorf("clusterconf: shard count %d", s.Shards)
	case s.EncryptionKey == "" || s.ClusterKey == "":
		return errors.New("clusterconf: the encryption key and cluster key checks are required")
	}
	return nil
}
