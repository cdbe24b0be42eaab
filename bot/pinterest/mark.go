package pinterest

import (
	"fmt"
	"net/url"
)

// MarkParam is the query parameter of a pin's link that carries the
// pin's mark (PinRequest.Mark), as in
// https://discord.com/channels/1/2/3?pinbot=MARK.
//
// The link is the only field of Pinterest's PinCreate that its Pin, as
// GET /pins lists it, also returns, that pinbot sets anyway, and that
// shows nothing new on the pin: Pinterest's current OpenAPI description
// documents link (2048 characters) in both, while title, description and
// alt_text are shown or read aloud, and the private note is no longer
// documented. Discord ignores the parameter, so the pin still leads to
// its message. Assumption: Pinterest keeps a link's query as sent, as
// campaign tags in links rely on; CreatePin logs a warning when its
// answer's link lacks the mark.
const MarkParam = "pinbot"

// maxMarkChars bounds a mark.
const maxMarkChars = 64

// validMark reports whether m can be a mark: 1 to 64 ASCII letters,
// digits, '-' or '_', which a URL's query carries unescaped, so that the
// mark reads back exactly as sent.
func validMark(m string) bool {
	if m == "" || len(m) > maxMarkChars {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// markLink returns link with MarkParam=mark added to its query, the rest
// of link as it was. link must be an absolute URL without MarkParam.
func markLink(link, mark string) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	if q, _ := url.ParseQuery(u.RawQuery); q.Has(MarkParam) {
		return "", fmt.Errorf("already has the query parameter %q", MarkParam)
	}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += MarkParam + "=" + mark
	u.ForceQuery = false
	return u.String(), nil
}

// MarkOf returns the mark that link, a pin's link, carries (see
// PinRequest.Mark): the value of its one MarkParam query parameter, or ""
// when it has none, several, or one that is not a well-formed mark.
func MarkOf(link string) string {
	if link == "" {
		return ""
	}
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	q, _ := url.ParseQuery(u.RawQuery) // the pairs that parse
	vs := q[MarkParam]
	if len(vs) != 1 || !validMark(vs[0]) {
		return ""
	}
	return vs[0]
}
