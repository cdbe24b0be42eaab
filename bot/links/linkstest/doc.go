// Package linkstest holds the conformance suite of links.Store: the
// contract the bot, its OAuth callback, the sandbox and the operator's
// tools rely on, run against every implementation.
//
//	func TestConformance(t *testing.T) {
//		linkstest.TestStore(t, func(t *testing.T) links.Store {
//			st, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { _ = st.Close() })
//			return st
//		})
//	}
package linkstest
