// Package persistence defines where the rate-limit engine's state lives:
// the Store interface, the events, snapshots and batches it stores, the
// errors every store shares, and the Journal, which group-commits the
// engine's writes to a Store. Every Store method takes a context first,
// and a write carries the writer's fencing token (Batch.Fence), which a
// store shared by several processes checks and a store of one process
// ignores. What only a disk store has (settling its index, checkpoints,
// a full disk) stays beside it, found by a type assertion where it is
// used.
//
// The stores are elsewhere: persistence/badgerstore keeps the state in a
// Badger database, persistence/codec is the byte encoding of what it
// stores, and persistence/persistencetest has the in-memory and
// fault-injecting stores tests use.
package persistence
