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
	// Link is where the pin leads; optional, at most 2048 characters.
	Link string
	// Title is optional, at most 100 characters.
	Title string
	// AltText describes the image; optional, at most 500 characters.
	AltText string
	// Description is optional, at most 800 characters.
	Description string
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
	return nil
}

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Pin is a created pin.
type Pin struct {
	ID          string
	BoardID     string
	Link        string
	Title       string
	Description string
	AltText     string
	// CreatedAt is Pinterest's creation time; zero if it sent none.
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
		Link:        req.Link,
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
	p := Pin{
		ID:          pj.ID,
		BoardID:     pj.BoardID,
		Link:        pj.Link,
		Title:       pj.Title,
		Description: pj.Description,
		AltText:     pj.AltText,
		URL:         pinURLBase + url.PathEscape(pj.ID) + "/",
	}
	if t, err := time.Parse(time.RFC3339, pj.CreatedAt); err == nil {
		p.CreatedAt = t
	}
	c.logger(ctx).Debug().Str("pin_id", p.ID).Str("board_id", p.BoardID).Msg("pinterest pin created")
	return p, nil
}
