package badgerstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/pinbot/pinbot/persistence/codec"
)

// newAEAD returns the cipher of the log's records for key, nil without a
// key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		return nil, nil
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: journal cipher: %w", err)
	}
	return cipher.NewGCM(b)
}

// seal encrypts rec, the payload of log record seq, when the store is
// encrypted: a random nonce, then the sealed record, bound to seq.
func (s *Store) seal(seq uint64, rec []byte) ([]byte, error) {
	if s.aead == nil {
		return rec, nil
	}
	ns := s.aead.NonceSize()
	out := s.sealed[:0]
	out = append(out, make([]byte, ns)...)
	if _, err := rand.Read(out[:ns]); err != nil {
		return nil, fmt.Errorf("badgerstore: journal nonce: %w", err)
	}
	var ad [8]byte
	binary.LittleEndian.PutUint64(ad[:], seq)
	out = s.aead.Seal(out, out[:ns], rec, ad[:])
	s.sealed = out
	return out, nil
}

// open decrypts the payload of log record seq.
func (s *Store) open(seq uint64, p []byte) ([]byte, error) {
	if s.aead == nil {
		return p, nil
	}
	ns := s.aead.NonceSize()
	if len(p) < ns {
		return nil, codec.Corrupt("sealed record too short")
	}
	var ad [8]byte
	binary.LittleEndian.PutUint64(ad[:], seq)
	out, err := s.aead.Open(nil, p[:ns], p[ns:], ad[:])
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", ErrEncryptionKey, codec.Corrupt("sealed record does not open"))
	}
	return out, nil
}
