// Package backup copies a pinbot data directory's two Badger databases,
// the engine's store (pin counts, reservations, jobs, rules, clock anchor)
// and the token store (links and OAuth tokens), into one file, and
// restores them from it.
//
// A backup is taken from the stores themselves (Take), which may be in
// use: a running pinbot serves backups on a Unix socket in its data
// directory (Handler, Listen), which `pinbot backup` asks (Fetch); the
// listings of package internal/control are asked over the same socket
// (Get). Each
// store is read at one instant, as Badger's DB.Backup reads it. The token
// store's copy is encrypted with a key derived from the token store's own
// key, since Badger's backups are not.
//
// The stores are reached through interfaces (EngineStore, LinksStore,
// Loaders) that package internal/app fills with pinbot's Badger stores:
// this package names no store of its own.
//
// Restore loads a backup into new directories and then readies the
// engine's store with actors.AfterRestore: the pins made after the backup
// are unknown, so no account is granted a slot until every pin of the
// runs before the restore has left its window. See docs/design.md,
// "Backup and restore".
//
// # File format
//
// Version 1, integers big-endian:
//
//	magic     "PINBOTBK"
//	version   uint16, 1
//	header    uint32 length, a JSON object (Header), its SHA-256
//	sections  one per store:
//	  kind    byte: 'E' the engine's store, 'L' the token store
//	  flags   byte: bit 0 set when the section is encrypted
//	  salt    32 bytes, encrypted sections only
//	  chunks  each a uint32 length and that many bytes; length 0 ends them
//	  size    uint64, the bytes of the chunks
//	  sum     SHA-256 of kind, flags, salt and the chunks' bytes
//	end       byte 'Z', then the SHA-256 of every byte before it
//
// A section holds its store's Badger backup stream, in chunks of at most
// 64 KiB. In an encrypted section each chunk is sealed with AES-256-GCM
// under a key derived by HKDF-SHA-256 from the token store's key and the
// section's salt, with the chunk's index as nonce: a flag byte (0) and the
// data, then a last chunk holding the flag 1 alone, so that a copy cut
// short at a chunk boundary is refused too.
package backup
