package linkstest

import (
	"testing"

	"github.com/pinbot/pinbot/bot/links"
)

// TestStore runs the behavioural suite every links.Store must pass, as
// subtests of t: linking, switching and unlinking accounts and the
// maximum per user, listings, settings (the default board, when_full),
// RelinkNeeded, tokens and their grant generations, a rotated token
// stored before the session uses it, single-use OAuth states and their
// expiry, the digests' outbox, the pins made elsewhere that the engine
// counts (remembered per account, forgotten after their Until, bounded),
// the servers' settings (per server, reset to the defaults),
// the errors of unknown users and accounts
// and of malformed arguments, a closed store, a canceled context, and
// concurrent use.
//
// open returns an empty store for one subtest, whose OAuth states live
// links.DefaultStateTTL, and arranges for it to be closed when the
// subtest ends; a subtest may close it first, so that closing must
// accept links.ErrClosed.
func TestStore(t *testing.T, open func(t *testing.T) links.Store) {
	tests := []struct {
		name string
		run  func(*testing.T, func(*testing.T) links.Store)
	}{
		// Users and accounts.
		{"LinkSwitchUnlink", testLinkSwitchUnlink},
		{"LinkStoresAccountAndToken", testLinkStoresAccountAndToken},
		{"SharedAccountKeepsTokenUntilLastUnlink", testSharedAccountKeepsTokenUntilLastUnlink},
		{"SetDefaultBoard", testSetDefaultBoard},
		{"MarkRelinkNeeded", testMarkRelinkNeeded},
		{"TooManyAccounts", testTooManyAccounts},
		{"Validation", testValidation},
		{"Listing", testListing},
		{"AccountUsers", testAccountUsers},
		{"SetQueueWhenFull", testSetQueueWhenFull},
		// Tokens.
		{"SaveToken", testSaveToken},
		{"SaverKeepsRotatedToken", testSaverKeepsRotatedToken},
		{"GrantGenerations", testGrantGenerations},
		{"GenerationSurvivesUnlink", testGenerationSurvivesUnlink},
		// OAuth states.
		{"ConsumeState", testConsumeState},
		{"StateFormat", testStateFormat},
		{"ConcurrentConsume", testConcurrentConsume},
		{"PurgeStates", testPurgeStates},
		{"NewStateRetiresOldest", testNewStateRetiresOldest},
		{"LinkStateKeepsRequest", testLinkStateKeepsRequest},
		// The digests' outbox.
		{"OutboxKeepsFirst", testOutboxKeepsFirst},
		{"OutboxDeleteMany", testOutboxDeleteMany},
		{"OutboxRefusesBadLines", testOutboxRefusesBadLines},
		// The pins made elsewhere that the engine counts.
		{"ObservedRemembers", testObservedRemembers},
		{"ObservedExpires", testObservedExpires},
		{"ObservedBound", testObservedBound},
		{"ObservedOutlivesLinks", testObservedOutlivesLinks},
		{"ObservedValidation", testObservedValidation},
		{"ObservedConcurrent", testObservedConcurrent},
		// The pictures pinned to each board.
		{"HistoryRemembers", testHistoryRemembers},
		{"HistoryForgets", testHistoryForgets},
		{"HistoryValidation", testHistoryValidation},
		// The servers' settings.
		{"GuildSettings", testGuildSettings},
		{"GuildsOutliveLinks", testGuildsOutliveLinks},
		{"GuildsValidation", testGuildsValidation},
		{"GuildsConcurrent", testGuildsConcurrent},
		// The servers' auto-pin rules.
		{"AutopinRules", testAutopinRules},
		{"AutopinRulesValidation", testAutopinRulesValidation},
		{"AutopinRulesConcurrent", testAutopinRulesConcurrent},
		// The store as a whole.
		{"ClosedStore", testClosedStore},
		{"CanceledContext", testCanceledContext},
		{"ConcurrentLinksOneUser", testConcurrentLinksOneUser},
		{"ConcurrentUsersOneAccount", testConcurrentUsersOneAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}
