package pinterest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Page sizes of ListPins.
const (
	// DefaultPinPageSize is the page ListPins asks for when
	// ListOptions.PageSize is 0. A pin takes a few kilobytes at most (a
	// 2048-character link, an 800-character description, the addresses
	// of its images), so that a page of this many stays well within
	// DefaultMaxResponseBytes, which a page of MaxPinPageSize might not.
	DefaultPinPageSize = 100
	// MaxPinPageSize is the largest page Pinterest serves.
	MaxPinPageSize = 250
)

// ListOptions says which pins ListPins returns. The zero value lists
// every pin the account owns, up to Config.MaxPinPages pages.
type ListOptions struct {
	// Since, when not zero, ends the listing at the first pin created
	// before it: ListPins returns the pins created at Since or later,
	// and reads no page after the one where an older pin appears.
	// Pinterest gives creation times in whole seconds, so Since counts
	// from the start of its second: a pin created in that second,
	// before Since or after, is listed.
	Since time.Time
	// BoardID, when not "", lists the pins on that board (GET
	// /boards/{board_id}/pins) instead of every pin the account owns
	// (GET /pins). A group board's listing holds the pins of its other
	// members too.
	BoardID string
	// MaxPages bounds the pages read: a listing that needs more fails
	// with ErrListingTruncated. 0 selects Config.MaxPinPages.
	MaxPages int
	// PageSize is how many pins each page asks for, 1 to
	// MaxPinPageSize; 0 selects DefaultPinPageSize.
	PageSize int
}

// validate reports the first problem with o, naming the field.
func (o ListOptions) validate() error {
	switch {
	case o.MaxPages < 0:
		return errors.New("pinterest: ListOptions.MaxPages is negative")
	case o.PageSize < 0 || o.PageSize > MaxPinPageSize:
		return fmt.Errorf("pinterest: ListOptions.PageSize %d is not between 1 and %d (or 0 for the default)", o.PageSize, MaxPinPageSize)
	}
	return nil
}

type pinsPage struct {
	Items    []pinJSON `json:"items"`
	Bookmark *string   `json:"bookmark"`
}

// ListPins returns the pins the account of s owns (GET /pins), or those
// on a board (opts.BoardID), newest first, each with its id, board,
// link, mark and creation time: pinbot's own pins, recognised by their
// Mark, and those the account's owner made elsewhere. It follows
// Pinterest's bookmarks page after page until the listing ends, reaches
// opts.Since, or has read opts.MaxPages pages.
//
// Pinterest lists pins newest first. With opts.Since, ListPins relies on
// that order to stop at the first older pin, and checks it on every pin
// it reads: one that comes after an older one fails the listing with
// ErrListingUnordered. A pin listed twice (new pins moved the listing
// under its bookmark) is returned once.
//
// A listing shows what Pinterest lists when each page is read, and
// Pinterest may list a pin only some time after creating it: a pin
// missing from a listing is not proof that it was never made, until
// that time has passed.
//
// On error, ListPins returns the pins read before it, newest first: they
// exist, but the rest of the listing was not read. Errors to expect:
// ErrListingTruncated (more pages than opts.MaxPages), ErrListingUnordered,
// ErrReauthRequired (which also matches ErrScopesMissing when the grant
// lacks pins:read or boards:read), ErrRateLimited (a *RateLimitError),
// ErrUnavailable (ErrCircuitOpen included), another *APIError (a board
// not found), a TokenSaver's error, and an error for an answer that
// cannot be used: a pin without id or readable created_at, a bookmark
// repeated. Each page is a GET, paused by Pinterest's rate limits,
// repeated after a passing failure (see RetryConfig) and sent through the
// circuit breaker as every request is, the token refreshed when needed.
func (c *Client) ListPins(ctx context.Context, s *Session, opts ListOptions) ([]Pin, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cl := call{method: http.MethodGet, path: "/pins"}
	if opts.BoardID != "" {
		cl.path = "/boards/" + url.PathEscape(opts.BoardID) + "/pins"
		cl.kind = "GET /boards/{board_id}/pins"
	}
	op := cl.op()
	maxPages := opts.MaxPages
	if maxPages == 0 {
		maxPages = c.cfg.MaxPinPages
	}
	size := opts.PageSize
	if size == 0 {
		size = DefaultPinPageSize
	}
	bySince := !opts.Since.IsZero()
	cutoff := opts.Since.Truncate(time.Second)

	var (
		pins      []Pin
		seen      = make(map[string]bool) // pin ids
		bookmarks = make(map[string]bool) // bookmarks followed
		bookmark  string
		last      time.Time // creation time of the last new pin read
		reached   bool      // a pin older than Since was read
	)
	for page := 1; ; page++ {
		if page > maxPages {
			return pins, fmt.Errorf("%w: %s: %d pages of %d pins read", ErrListingTruncated, op, maxPages, size)
		}
		cl.query = url.Values{"page_size": {strconv.Itoa(size)}}
		if bookmark != "" {
			cl.query.Set("bookmark", bookmark)
		}
		var p pinsPage
		if err := c.do(ctx, s, cl, &p); err != nil {
			return pins, err
		}
		for _, pj := range p.Items {
			if pj.ID == "" {
				return pins, fmt.Errorf("pinterest: %s: pin without id on page %d", op, page)
			}
			if seen[pj.ID] {
				continue
			}
			seen[pj.ID] = true
			at, err := parseCreatedAt(pj.CreatedAt)
			if err != nil {
				return pins, fmt.Errorf("pinterest: %s: pin %s on page %d: %w", op, pj.ID, page, err)
			}
			if bySince && !last.IsZero() && at.After(last) {
				return pins, fmt.Errorf("%w: %s: pin %s created at %s comes after one created at %s (page %d)",
					ErrListingUnordered, op, pj.ID, at.Format(time.RFC3339), last.Format(time.RFC3339), page)
			}
			last = at
			if bySince && at.Before(cutoff) {
				reached = true
				continue
			}
			pin := pj.pin()
			pin.CreatedAt = at
			pins = append(pins, pin)
		}
		if reached || p.Bookmark == nil || *p.Bookmark == "" {
			c.logger(ctx).Debug().Str("op", op).Int("pages", page).Int("pins", len(pins)).Msg("pinterest pins listed")
			return pins, nil
		}
		bookmark = *p.Bookmark
		if bookmarks[bookmark] {
			return pins, fmt.Errorf("pinterest: %s: bookmark repeated on page %d", op, page)
		}
		bookmarks[bookmark] = true
	}
}
