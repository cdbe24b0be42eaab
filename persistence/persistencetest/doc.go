// Package persistencetest provides stand-ins for persistence.Store in
// tests, as net/http/httptest does for HTTP: MemStore, an in-memory store
// with the Badger store's semantics (and a clock the test controls);
// FaultStore, which wraps a store and makes chosen calls fail; and
// FenceStore, which wraps a store and refuses writes under a stale fencing
// token, as a store shared by several processes would. TestStore is the
// behavioural suite every persistence.Store passes.
//
// The bot (cmd/pinbot) never imports this package; tests do, and so does
// the benchmark tool cmd/pinbench, whose disk-full run injects faults with
// FaultStore.
package persistencetest
