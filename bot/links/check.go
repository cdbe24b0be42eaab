package links

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/oauth2"
)

// The checks below are those every Store applies to its arguments before
// reading or writing anything; their errors wrap ErrInvalid and name the
// argument. They are exported so that every implementation refuses the
// same input with the same message.

// CheckID reports an id that is empty, longer than MaxIDLen, or not made
// of ASCII letters, digits and "-_.:". kind names it in the error.
func CheckID(kind, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalid, kind)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, kind, len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return fmt.Errorf("%w: %s %q has a character other than ASCII letters, digits and \"-_.:\"",
				ErrInvalid, kind, id)
		}
	}
	return nil
}

// CheckInteraction reports an interaction token longer than MaxTokenLen
// or holding anything but printable ASCII without spaces. An empty token
// is allowed.
func CheckInteraction(tok string) error {
	if len(tok) > MaxTokenLen {
		return fmt.Errorf("%w: interaction token is %d bytes, more than %d", ErrInvalid, len(tok), MaxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: interaction token has a character other than printable ASCII", ErrInvalid)
		}
	}
	return nil
}

// CheckName reports a name longer than MaxNameLen, not valid UTF-8, or
// holding control characters. Empty names are allowed.
func CheckName(kind, name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, kind, len(name), MaxNameLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, kind)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s %q has a control character", ErrInvalid, kind, name)
		}
	}
	return nil
}

// CheckToken reports a token that cannot be stored. Its error never
// quotes the token.
func CheckToken(tok *oauth2.Token) error {
	switch {
	case tok == nil:
		return fmt.Errorf("%w: token is nil", ErrInvalid)
	case tok.AccessToken == "" && tok.RefreshToken == "":
		return fmt.Errorf("%w: token has neither access nor refresh token", ErrInvalid)
	case len(tok.AccessToken) > MaxTokenLen:
		return fmt.Errorf("%w: access token is %d bytes, more than %d", ErrInvalid, len(tok.AccessToken), MaxTokenLen)
	case len(tok.RefreshToken) > MaxTokenLen:
		return fmt.Errorf("%w: refresh token is %d bytes, more than %d", ErrInvalid, len(tok.RefreshToken), MaxTokenLen)
	case len(tok.TokenType) > MaxIDLen:
		return fmt.Errorf("%w: token type is %d bytes, more than %d", ErrInvalid, len(tok.TokenType), MaxIDLen)
	}
	return nil
}
