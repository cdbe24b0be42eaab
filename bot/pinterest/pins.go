package pinterest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"
)

// PinRequest describes a pin to create from an image on the web.
type PinRequest struct {
	// BoardID is the board to pin to; required.
	BoardID string
	// ImageURL is the image Pinterest fetches; required, absolute http(s).
	ImageURL string
	// Link is where the pin leads; optional, at most 2048 characters
	// with the mark.
	Link string
	// Title is optional, at most 100 characters.
	Title string
	// AltText describes the image; optional, at most 500 characters.
	AltText string
	// Description is optional, at most 800 characters.
	Description string
	// Mark, when not "", identifies the pin so that a later listing
	// (ListPins) recognises it: Pinterest does not say, for a request
	// whose answer was lost, whether it made the pin. It is sent in the
	// pin's link, as the query parameter MarkParam added to Link (see
	// MarkParam for why there), and comes back as Pin.Mark. It needs a
	// Link, and is 1 to 64 ASCII letters, digits, '-' or '_'. Anyone who
	// opens the pin's link sees it: give it no meaning beyond pinbot,
	// such as an opaque identifier of the pin's reservation, unique to
	// it.
	Mark string
}

// Limits from Pinterest's PinCreate schema, in characters.
const (
	maxLinkChars        = 2048
	maxTitleChars       = 100
	maxAltTextChars     = 500
	maxDescriptionChars = 800
)

// Validate reports the first problem with r, naming the field. CreatePin
// calls it before sending anything.
func (r PinRequest) Validate() error {
	if r.BoardID == "" {
		return fmt.Errorf("pinterest: PinRequest.BoardID is empty")
	}
	if r.ImageURL == "" {
		return fmt.Errorf("pinterest: PinRequest.ImageURL is empty")
	}
	if !isWebURL(r.ImageURL) {
		return fmt.Errorf("pinterest: PinRequest.ImageURL is not an absolute http(s) URL")
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"Link", r.Link, maxLinkChars},
		{"Title", r.Title, maxTitleChars},
		{"AltText", r.AltText, maxAltTextChars},
		{"Description", r.Description, maxDescriptionChars},
	} {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return fmt.Errorf("pinterest: PinRequest.%s has %d characters, more than %d", f.name, n, f.max)
		}
	}
	if r.Link != "" && !isWebURL(r.Link) {
		return fmt.Errorf("pinterest: PinRequest.Link is not an absolute http(s) URL")
	}
	if r.Mark == "" {
		return nil
	}
	if !validMark(r.Mark) {
		return fmt.Errorf("pinterest: PinRequest.Mark is not 1 to %d ASCII letters, digits, '-' or '_'", maxMarkChars)
	}
	if r.Link == "" {
		return fmt.Errorf("pinterest: PinRequest.Mark needs a Link to carry it")
	}
	link, err := markLink(r.Link, r.Mark)
	if err != nil {
		return fmt.Errorf("pinterest: PinRequest.Link cannot carry the mark: %w", err)
	}
	if n := utf8.RuneCountInString(link); n > maxLinkChars {
		return fmt.Errorf("pinterest: PinRequest.Link with its mark has %d characters, more than %d", n, maxLinkChars)
	}
	return nil
}

// link returns the link to send for r, a valid request: Link, with the
// mark when r has one.
func (r PinRequest) link() string {
	if r.Mark == "" {
		return r.Link
	}
	l, err := markLink(r.Link, r.Mark)
	if err != nil {
		return r.Link // not reached: Validate checked it
	}
	return l
}

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Pin is a pin as Pinterest describes it: created (CreatePin) or listed
// (ListPins).
type Pin struct {
	ID      string
	BoardID string
	// Link is the pin's link as Pinterest keeps it, its mark included.
	Link string
	// Mark is the mark Link carries (see PinRequest.Mark and MarkOf), ""
	// when it carries none.
	Mark        string
	Title       string
	Description string
	AltText     string
	// CreatedAt is Pinterest's creation time, in UTC, as precise as
	// Pinterest writes it (whole seconds); zero when CreatePin's answer
	// held none it could read.
	CreatedAt time.Time
	// URL is the pin's page, built from its ID as
	// https://www.pinterest.com/pin/{id}/ (the API does not return it).
	URL string
}

// pinURLBase is where pin pages live, also for sandbox pins.
const pinURLBase = "https://www.pinterest.com/pin/"

type pinCreateBody struct {
	BoardID     string      `json:"board_id"`
	MediaSource mediaSource `json:"media_source"`
	Link        string      `json:"link,omitempty"`
	Title       string      `json:"title,omitempty"`
	AltText     string      `json:"alt_text,omitempty"`
	Description string      `json:"description,omitempty"`
}

type mediaSource struct {
	SourceType string `json:"source_type"`
	URL        string `json:"url"`
}

type pinJSON struct {
	ID          string `json:"id"`
	BoardID     string `json:"board_id"`
	Link        string `json:"link"`
	Title       string `json:"title"`
	Description string `json:"description"`
	AltText     string `json:"alt_text"`
	CreatedAt   string `json:"created_at"`
}

// CreatePin creates a pin from req on the account of s (POST /pins).
//
// The request is sent at most once, apart from one repeat after a 401
// (which Pinterest answers before acting). Errors to expect, besides
// *APIError: ErrOutcomeUnknown (the pin may exist; count it),
// ErrImageRejected (this pin fails, go on with others), ErrRateLimited and
// ErrSpamBlocked (nothing created; wait for the *RateLimitError's ResetAt),
// ErrReauthRequired, ErrNoTime (nothing created: ctx's send deadline, see
// WithSendDeadline, came too close), and a TokenSaver's error (nothing
// sent).
func (c *Client) CreatePin(ctx context.Context, s *Session, req PinRequest) (Pin, error) {
	if err := req.Validate(); err != nil {
		return Pin{}, err
	}
	body, err := json.Marshal(pinCreateBody{
		BoardID:     req.BoardID,
		MediaSource: mediaSource{SourceType: "image_url", URL: req.ImageURL},
		Link:        req.link(),
		Title:       req.Title,
		AltText:     req.AltText,
		Description: req.Description,
	})
	if err != nil {
		return Pin{}, fmt.Errorf("pinterest: POST /pins: encoding request: %w", err)
	}
	cl := call{method: http.MethodPost, path: "/pins", body: body, sideEffect: true}
	var pj pinJSON
	if err := c.do(ctx, s, cl, &pj); err != nil {
		return Pin{}, err
	}
	if pj.ID == "" {
		return Pin{}, fmt.Errorf("%w: pinterest: POST /pins: %w", ErrOutcomeUnknown, errNoID)
	}
	p := pj.pin()
	if t, err := parseCreatedAt(pj.CreatedAt); err == nil {
		p.CreatedAt = t
	}
	if req.Mark != "" && p.Mark != req.Mark {
		// The pin exists; but a lookup of this mark could not find it,
		// nor any other pin sent with one: the bot must not rely on
		// lookups while Pinterest does this.
		c.logger(ctx).Warn().Str("pin_id", p.ID).Msg("pinterest kept the pin without its mark in the link")
	}
	c.logger(ctx).Debug().Str("pin_id", p.ID).Str("board_id", p.BoardID).Msg("pinterest pin created")
	return p, nil
}

// pin returns the Pin pj describes, without its creation time.
func (pj pinJSON) pin() Pin {
	return Pin{
		ID:          pj.ID,
		BoardID:     pj.BoardID,
		Link:        pj.Link,
		Mark:        MarkOf(pj.Link),
		Title:       pj.Title,
		Description: pj.Description,
		AltText:     pj.AltText,
		URL:         pinURLBase + url.PathEscape(pj.ID) + "/",
	}
}

// createdAtLayouts are the forms of a pin's created_at that are read:
// RFC 3339, and the same without a zone, as Pinterest's answers have
// been seen to write it. Assumption: a time without a zone is UTC.
var createdAtLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"}

// parseCreatedAt reads a pin's created_at, in UTC.
func parseCreatedAt(s string) (time.Time, error) {
	for _, layout := range createdAtLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("created_at %q is not a date-time", s)
}
