// Package badgerutil holds what every Badger database of pinbot needs
// around the database itself, shared by the rate-limit engine's store
// (persistence/badgerstore) and the account-link store (bot/links):
//
//   - [Lifecycle], which lets a store's methods run concurrently and makes
//     Close wait for the calls in progress;
//   - [NewLogger], which sends Badger's log messages to zerolog at the
//     levels pinbot uses;
//   - [RemoveEmptyLogs], the sweep that lets Badger open a directory
//     left behind by a process killed while Badger created or deleted one
//     of its log files.
package badgerutil
