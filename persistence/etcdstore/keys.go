package etcdstore

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// Key layout below keys.State(p) of partition p (see the package
// documentation). Account IDs hold no NUL byte, so the NUL after one
// ends it: the keys of account "a" ("a\x00...") sort before those of
// "a\x01" and "ab", and one account's prefix never covers another's.
const (
	accountsDir = "a/" // account state: snapshot and journal
	jobsDir     = "j/" // jobs
	hwName      = "hw" // the partition's high-water mark
	snapName    = "s"  // after account NUL: the snapshot
	eventsDir   = "e/" // after account NUL: journal events by seq
	rulesName   = "rules"
	anchorsDir  = "anchors/"
	seqWidth    = 16 // hex digits of a seq or job ID in a key
	endOfAcctID = "\x00"
)

// layout names the keys of one store.
type layout struct {
	keys partition.Keys
}

// accountsRoot is the prefix of every account's state in partition p.
func (l layout) accountsRoot(p partition.ID) string { return l.keys.State(p) + accountsDir }

// jobsRoot is the prefix of every account's jobs in partition p.
func (l layout) jobsRoot(p partition.ID) string { return l.keys.State(p) + jobsDir }

// account is the prefix of account's state (snapshot and events).
func (l layout) account(p partition.ID, account string) string {
	return l.accountsRoot(p) + account + endOfAcctID
}

func (l layout) snapshot(p partition.ID, account string) string {
	return l.account(p, account) + snapName
}

// events is the prefix of account's journal events.
func (l layout) events(p partition.ID, account string) string {
	return l.account(p, account) + eventsDir
}

// jobs is the prefix of account's jobs.
func (l layout) jobs(p partition.ID, account string) string {
	return l.jobsRoot(p) + account + endOfAcctID
}

func (l layout) highWater(p partition.ID) string { return l.keys.State(p) + hwName }

func (l layout) globalHighWater() string { return l.keys.Global() + hwName }

func (l layout) rules() string { return l.keys.Global() + rulesName }

func (l layout) anchor(member string) string { return l.keys.Global() + anchorsDir + member }

// appendNum appends n as seqWidth lower-case hex digits, so that key
// order is numeric order.
func appendNum(dst []byte, n uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := (seqWidth - 1) * 4; shift >= 0; shift -= 4 {
		dst = append(dst, digits[(n>>uint(shift))&0xf])
	}
	return dst
}

// numKey returns prefix followed by n in fixed width.
func numKey(prefix string, n uint64) string {
	b := make([]byte, 0, len(prefix)+seqWidth)
	b = append(b, prefix...)
	return string(appendNum(b, n))
}

// parseNum parses a number written by appendNum; ok is false if s is not
// one.
func parseNum(s string) (n uint64, ok bool) {
	if len(s) != seqWidth {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// splitAccount splits key, below root, into the account ID and what
// follows its NUL; ok is false if key is not of that form.
func splitAccount(root, key string) (account, rest string, ok bool) {
	if !strings.HasPrefix(key, root) {
		return "", "", false
	}
	account, rest, ok = strings.Cut(key[len(root):], endOfAcctID)
	return account, rest, ok
}

// rangeEnd returns the end of the range of keys that start with prefix.
func rangeEnd(prefix string) string { return clientv3.GetPrefixRangeEnd(prefix) }
