// Package badgerstore keeps the rate-limit engine's state in a Badger
// database: a persistence.Store with a write-ahead log of its own, so that
// a group commit of any number of accounts' events is one small
// transaction and one fsync.
//
// # Usage
//
//	store, err := badgerstore.Open(dir, badgerstore.Options{Durable: true}, log)
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	journal := persistence.NewJournal(store, 0, log)
//	defer journal.Close()
package badgerstore
