package etcdstore

import (
	"fmt"
	"time"

	"github.com/pinbot/pinbot/internal/partition"
)

// Defaults of Options.
const (
	// DefaultMaxTxnOps is etcd's default --max-txn-ops.
	DefaultMaxTxnOps = 128
	// DefaultMaxTxnBytes keeps a transaction well under etcd's default
	// --max-request-bytes (1.5 MiB).
	DefaultMaxTxnBytes = 1 << 20
	// DefaultLeaseBucket is how far expiries are rounded up so that the
	// keys expiring within it share one lease.
	DefaultLeaseBucket = time.Minute
	// DefaultRequestTimeout bounds each etcd request when
	// Options.RequestTimeout is zero.
	DefaultRequestTimeout = 5 * time.Second
	// DefaultScanPage is the number of keys a scan reads per request.
	DefaultScanPage = 256
)

// Options configures Open. The zero value is a store of
// partition.DefaultCount partitions that does not fence, with the
// defaults above.
type Options struct {
	// Partitions is the cluster's partition count (0:
	// partition.DefaultCount). Every store over the same keys must use the
	// same count: it decides where each account's state lives.
	Partitions int
	// Fenced makes every account write conditional on its partition's
	// owner key (see the package documentation). Without it writes are
	// unconditional and fences ignored: for a single process, or an
	// operator's import tool run while no member does.
	Fenced bool
	// Member names this member's clock anchor (keys.Global()/anchors/Member).
	Member string
	// Now is the engine clock, Unix milliseconds, that expiries are
	// measured against (nil: the wall clock). Leases run on etcd's own
	// clock, from the instant they are granted.
	Now func() int64
	// MaxTxnOps is the most operations of one etcd transaction (0:
	// DefaultMaxTxnOps); it must not exceed the cluster's --max-txn-ops.
	MaxTxnOps int
	// MaxTxnBytes bounds the size of one etcd transaction (0:
	// DefaultMaxTxnBytes); it must stay under the cluster's
	// --max-request-bytes.
	MaxTxnBytes int
	// LeaseBucket is the granularity, in whole seconds, to which expiries
	// are rounded up for their lease (0: DefaultLeaseBucket).
	LeaseBucket time.Duration
	// RequestTimeout bounds each etcd request, so that a call fails
	// rather than wait for an unreachable cluster (0:
	// DefaultRequestTimeout). A context's earlier deadline wins.
	RequestTimeout time.Duration
	// ScanPage is the number of keys a scan reads per request (0:
	// DefaultScanPage).
	ScanPage int
}

// minTxnOps leaves room for an account operation beside the high-water
// mark's nested transaction (see hwReserve).
const minTxnOps = hwReserve + 1

// minTxnBytes leaves room for a few keys in a transaction.
const minTxnBytes = 4096

// withDefaults returns o with its zero fields set to their defaults, or
// an error naming the field at fault.
func (o Options) withDefaults() (Options, error) {
	if o.Partitions == 0 {
		o.Partitions = partition.DefaultCount
	}
	if o.Partitions < 1 || o.Partitions > partition.MaxCount {
		return o, fmt.Errorf("etcdstore: Options.Partitions %d: want 1 to %d", o.Partitions, partition.MaxCount)
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if o.MaxTxnOps == 0 {
		o.MaxTxnOps = DefaultMaxTxnOps
	}
	if o.MaxTxnOps < minTxnOps {
		return o, fmt.Errorf("etcdstore: Options.MaxTxnOps %d: want at least %d", o.MaxTxnOps, minTxnOps)
	}
	if o.MaxTxnBytes == 0 {
		o.MaxTxnBytes = DefaultMaxTxnBytes
	}
	if o.MaxTxnBytes < minTxnBytes {
		return o, fmt.Errorf("etcdstore: Options.MaxTxnBytes %d: want at least %d", o.MaxTxnBytes, minTxnBytes)
	}
	if o.LeaseBucket == 0 {
		o.LeaseBucket = DefaultLeaseBucket
	}
	if o.LeaseBucket < time.Second || o.LeaseBucket%time.Second != 0 {
		return o, fmt.Errorf("etcdstore: Options.LeaseBucket %v: want a whole number of seconds", o.LeaseBucket)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RequestTimeout < 0 {
		return o, fmt.Errorf("etcdstore: Options.RequestTimeout %v is negative", o.RequestTimeout)
	}
	if o.ScanPage == 0 {
		o.ScanPage = DefaultScanPage
	}
	if o.ScanPage < 1 {
		return o, fmt.Errorf("etcdstore: Options.ScanPage %d: want at least 1", o.ScanPage)
	}
	return o, nil
}
