package backup

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Errors of reading a backup. Match them with errors.Is.
var (
	// ErrNotBackup: the file does not start as a pinbot backup does.
	ErrNotBackup = errors.New("backup: not a pinbot backup")
	// ErrVersion: the file is a backup in a format this pinbot does not
	// read (a newer one).
	ErrVersion = errors.New("backup: unsupported backup format")
	// ErrCorrupt: the file is damaged or cut short: a checksum does not
	// match, or it ends early.
	ErrCorrupt = errors.New("backup: the file is corrupt or truncated")
	// ErrNoKey: the backup holds a token store, and no key was given to
	// decrypt it.
	ErrNoKey = errors.New("backup: the backup holds a token store: its encryption key is needed")
	// ErrKey: the key given is not the one the token store was encrypted
	// with when the backup was taken.
	ErrKey = errors.New("backup: the token store in the backup was encrypted with another key")
)

// Kind names the store a section holds.
type Kind byte

const (
	// Engine is the rate-limit engine's store (DIR/engine).
	Engine Kind = 'E'
	// Links is the token store (DIR/links).
	Links Kind = 'L'
)

// String names the store.
func (k Kind) String() string {
	switch k {
	case Engine:
		return "engine store"
	case Links:
		return "token store"
	}
	return fmt.Sprintf("section %q", byte(k))
}

const (
	magic         = "PINBOTBK"
	formatVersion = 1
	// maxHeader bounds the header's JSON.
	maxHeader = 64 << 10
	// chunkSize is the most data one chunk carries.
	chunkSize = 64 << 10
	// sealedOverhead is what sealing adds to a chunk's data: the flag
	// byte and GCM's tag.
	sealedOverhead = 1 + 16
	saltLen        = 32
	flagEncrypted  = 1
	endMark        = 'Z'
	// The flag byte that starts each sealed chunk.
	chunkData  = 0
	chunkFinal = 1
)

// hkdfInfo binds the derived key to its use.
const hkdfInfo = "pinbot backup v1: token store"

// Header describes a backup.
type Header struct {
	// Created is when the backup was taken, by the wall clock.
	Created time.Time `json:"created"`
	// Pinbot is the version of the pinbot that took it.
	Pinbot string `json:"pinbot"`
	// Online says whether the stores were in use by a running pinbot.
	Online bool `json:"online"`
	// HighWater is the engine store's high-water mark when the backup
	// began: the newest engine time (Unix ms) its state refers to.
	HighWater int64 `json:"engine_high_water"`
}

// SectionInfo describes one section of a backup.
type SectionInfo struct {
	Kind      Kind
	Encrypted bool
	// Size is the bytes of its chunks.
	Size int64
}

// Info describes a backup file.
type Info struct {
	Header
	// Version is the file's format version.
	Version  int
	Sections []SectionInfo
	// Size is the file's length, in bytes.
	Size int64
}

// Has reports whether the backup holds a section of kind k.
func (i Info) Has(k Kind) bool {
	for _, s := range i.Sections {
		if s.Kind == k {
			return true
		}
	}
	return false
}

// sectionAEAD returns the cipher of an encrypted section: AES-256-GCM
// under the key HKDF-SHA-256 derives from key and salt.
func sectionAEAD(key, salt []byte) (cipher.AEAD, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("backup: the key is %d bytes, want 16, 24 or 32", len(key))
	}
	k, err := hkdf.Key(sha256.New, key, salt, hkdfInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// chunkNonce returns the nonce of chunk i of a section.
func chunkNonce(dst []byte, i uint64) []byte {
	dst = append(dst[:0], 0, 0, 0, 0)
	return binary.BigEndian.AppendUint64(dst, i)
}
