package links

import (
	"context"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
)

// Saver returns the pinterest.TokenSaver of account accountID: it saves
// each rotated token with st.SaveToken.
func Saver(st Tokens, accountID string) pinterest.TokenSaver {
	return func(ctx context.Context, tok *oauth2.Token) error {
		return st.SaveToken(ctx, accountID, tok)
	}
}

// GrantSaver returns the pinterest.TokenSaver of generation gen of
// account accountID's grant (see Tokens.Grant): it saves each rotated
// token with st.SaveGrantToken, so that a refresh of an earlier grant
// never replaces the token of a newer one.
func GrantSaver(st Tokens, accountID string, gen uint64) pinterest.TokenSaver {
	return func(ctx context.Context, tok *oauth2.Token) error {
		return st.SaveGrantToken(ctx, accountID, gen, tok)
	}
}
