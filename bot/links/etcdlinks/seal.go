package etcdlinks

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
)

// sealFormat is the first byte of every sealed value: AES-GCM with a
// random 96-bit nonce, the nonce before the ciphertext.
const sealFormat = 1

// keyCheckKey holds a known text sealed with the store's key, written by
// the first Open; a member whose key cannot open it refuses to start.
const (
	keyCheckKey  = "m/key-check"
	keyCheckText = "pinbot links key check"
)

// sealer seals and opens values with the store's AES key. The key a value
// is stored under is its additional data, so that a value copied to
// another key (one account's token to another account) does not open.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", links.ErrEncryptionKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", links.ErrEncryptionKey, err)
	}
	return &sealer{aead: aead}, nil
}

// sealValue returns plain sealed for the key rel (relative to the store's
// prefix).
func (c *sealer) sealValue(rel string, plain []byte) []byte {
	n := c.aead.NonceSize()
	out := make([]byte, 1+n, 1+n+len(plain)+c.aead.Overhead())
	out[0] = sealFormat
	rand.Read(out[1:]) // crypto/rand.Read never returns an error
	return c.aead.Seal(out, out[1:], plain, []byte(rel))
}

// errUnsealed is wrapped by the error of a value that does not open.
var errUnsealed = errors.New("does not open with the encryption key")

// openValue returns the plain text of v, sealed for the key rel.
func (c *sealer) openValue(rel string, v []byte) ([]byte, error) {
	n := c.aead.NonceSize()
	if len(v) < 1+n+c.aead.Overhead() || v[0] != sealFormat {
		return nil, fmt.Errorf("not a sealed value (%d bytes)", len(v))
	}
	plain, err := c.aead.Open(nil, v[1:1+n], v[1+n:], []byte(rel))
	if err != nil {
		return nil, errUnsealed
	}
	return plain, nil
}

// checkKey stores the key check if the store has none, in one request,
// and otherwise makes sure that it opens with the store's key.
func (s *Store) checkKey(ctx context.Context) error {
	k := s.key(keyCheckKey)
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(s.seal.sealValue(keyCheckKey, []byte(keyCheckText))))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return s.etcdError("open: key check", err)
	}
	if resp.Succeeded {
		s.log.Info().Str("prefix", s.prefix).Msg("new links store: key check stored")
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("links: open: key check %q vanished; try again", k)
	}
	plain, err := s.seal.openValue(keyCheckKey, kvs[0].Value)
	if err != nil || string(plain) != keyCheckText {
		return fmt.Errorf("%w: the links store under %q was sealed with another encryption key", links.ErrEncryptionKey, s.prefix)
	}
	return nil
}
