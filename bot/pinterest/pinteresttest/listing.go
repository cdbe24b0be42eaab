package pinteresttest

import (
	"encoding/base64"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Page sizes of the pin listings, as Pinterest's OpenAPI description
// gives them (Pinterest.Lib.BookmarkParams.page_size).
const (
	defaultPinPageSize = 25
	maxPinPageSize     = 250
)

// WithListingLag makes every pin appear in listings only d after its
// creation; see SetListingLag.
func WithListingLag(d time.Duration) Option {
	return func(s *Server) { s.listingLag = d }
}

// SetListingLag makes every pin appear in the listings (GET /v5/pins,
// GET /v5/boards/{board_id}/pins) only once the Server's clock reaches
// its creation time plus d, as Pinterest, eventually consistent, may
// list a pin some time after making it; 0 (the default) lists a pin
// from its creation on. It applies to pins made before the call too.
func (s *Server) SetListingLag(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listingLag = d
}

// HidePin keeps the pin pinID out of the listings until the Server's
// clock reaches until, or for the listing lag after its creation,
// whichever ends later.
func (s *Server) HidePin(pinID string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hidden[pinID] = until
}

// listedLocked reports whether p appears in listings at now. s.mu is
// held.
func (s *Server) listedLocked(p Pin, now time.Time) bool {
	from := p.CreatedAt.Add(s.listingLag)
	if h, ok := s.hidden[p.ID]; ok && h.After(from) {
		from = h
	}
	return !now.Before(from)
}

type pinsAnswer struct {
	Items    []pinAnswer `json:"items"`
	Bookmark *string     `json:"bookmark"`
}

// listPins serves GET /v5/pins (board "") and GET
// /v5/boards/{board_id}/pins: the account's pins, or those on its board,
// that are listed at the Server's clock (see SetListingLag), newest first
// (by creation time, then the later id first), with page_size (default
// 25, at most 250) and an opaque bookmark naming the last pin answered,
// so that pins made between pages do not shift the next page. stuck
// answers the request's own bookmark (or, for a first page, a fresh
// one) as the next one.
func (s *Server) listPins(r *http.Request, board string, stuck bool) result {
	acct, bad := s.authenticate(r, listPinsScopes...)
	if bad != nil {
		return *bad
	}
	q := r.URL.Query()
	size := defaultPinPageSize
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPinPageSize {
			return errorResult(http.StatusBadRequest, CodeInvalidParameters, "page_size must be between 1 and 250.")
		}
		size = n
	}
	var after *pinCursor
	if bm := q.Get("bookmark"); bm != "" {
		c, ok := decodePinCursor(bm)
		if !ok {
			return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid bookmark.")
		}
		after = &c
	}

	s.mu.Lock()
	a := s.accounts[acct]
	if board != "" && !a.hasBoard(board) {
		s.mu.Unlock()
		res := errorResult(http.StatusNotFound, http.StatusNotFound, "Board not found.")
		res.account = acct
		return res
	}
	now := s.now()
	var listed []Pin
	for _, p := range s.pins {
		if p.AccountID == acct && (board == "" || p.BoardID == board) && s.listedLocked(p, now) {
			listed = append(listed, p)
		}
	}
	username := a.username
	s.mu.Unlock()

	slices.SortFunc(listed, func(x, y Pin) int { return cursorOf(y).compare(cursorOf(x)) })
	start := 0
	if after != nil {
		// The first pin that comes after the cursor: older than it.
		start, _ = slices.BinarySearchFunc(listed, *after, func(p Pin, c pinCursor) int { return c.compare(cursorOf(p)) })
		for start < len(listed) && cursorOf(listed[start]).compare(*after) == 0 {
			start++
		}
	}
	end := min(start+size, len(listed))
	items := make([]pinAnswer, 0, end-start)
	for _, p := range listed[start:end] {
		items = append(items, answerOf(p, username))
	}
	var next *string
	switch {
	case stuck && q.Get("bookmark") != "":
		bm := q.Get("bookmark")
		next = &bm
	case stuck:
		bm := pinCursor{at: time.Unix(0, math.MaxInt64)}.encode()
		next = &bm
	case end < len(listed):
		bm := cursorOf(listed[end-1]).encode()
		next = &bm
	}
	return result{status: http.StatusOK, account: acct, body: pinsAnswer{Items: items, Bookmark: next}}
}

// pinCursor is a place in a listing: the pin created at at with id id.
type pinCursor struct {
	at time.Time
	id string
}

func cursorOf(p Pin) pinCursor { return pinCursor{at: p.CreatedAt, id: p.ID} }

// compare orders cursors oldest first: by creation time, then by id
// (fixed-width digits, so that string order is numeric order).
func (c pinCursor) compare(d pinCursor) int {
	if n := c.at.Compare(d.at); n != 0 {
		return n
	}
	return strings.Compare(c.id, d.id)
}

func (c pinCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte("pins:" + strconv.FormatInt(c.at.UnixNano(), 10) + ":" + c.id))
}

func decodePinCursor(bm string) (pinCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(bm)
	if err != nil {
		return pinCursor{}, false
	}
	v, ok := strings.CutPrefix(string(b), "pins:")
	if !ok {
		return pinCursor{}, false
	}
	ns, id, ok := strings.Cut(v, ":")
	if !ok {
		return pinCursor{}, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return pinCursor{}, false
	}
	return pinCursor{at: time.Unix(0, n).UTC(), id: id}, true
}
