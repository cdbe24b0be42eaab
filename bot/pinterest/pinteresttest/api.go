package pinteresttest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// pinBody is the part of Pinterest's PinCreate the Server reads.
type pinBody struct {
	BoardID     string `json:"board_id"`
	MediaSource *struct {
		SourceType string `json:"source_type"`
		URL        string `json:"url"`
	} `json:"media_source"`
	Link        string `json:"link"`
	Title       string `json:"title"`
	Description string `json:"description"`
	AltText     string `json:"alt_text"`
}

// pinAnswer is the part of Pinterest's Pin the Server answers.
type pinAnswer struct {
	ID          string    `json:"id"`
	CreatedAt   string    `json:"created_at"`
	BoardID     string    `json:"board_id"`
	BoardOwner  ownerJSON `json:"board_owner"`
	Link        string    `json:"link,omitempty"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description,omitempty"`
	AltText     string    `json:"alt_text,omitempty"`
	IsOwner     bool      `json:"is_owner"`
	Media       mediaJSON `json:"media"`
}

type ownerJSON struct {
	Username string `json:"username"`
}

type mediaJSON struct {
	MediaType string `json:"media_type"`
}

// createPin serves POST /v5/pins for image_url media sources.
func (s *Server) createPin(r *http.Request) result {
	acct, bad := s.authenticate(r, createPinScopes...)
	if bad != nil {
		return *bad
	}
	var b pinBody
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&b); err != nil {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid request body.")
	}
	if b.BoardID == "" {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "board_id is required.")
	}
	if b.MediaSource == nil || b.MediaSource.SourceType != "image_url" {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "media_source.source_type must be image_url.")
	}
	if u, err := url.Parse(b.MediaSource.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "media_source.url is not a valid URL.")
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{{"link", b.Link, 2048}, {"title", b.Title, 100}, {"description", b.Description, 800}, {"alt_text", b.AltText, 500}} {
		if utf8.RuneCountInString(f.value) > f.max {
			return errorResult(http.StatusBadRequest, CodeInvalidParameters, f.name+" is too long.")
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[acct]
	if !a.hasBoard(b.BoardID) {
		res := errorResult(http.StatusForbidden, CodeNotPermitted, "You are not permitted to access that resource.")
		res.account = acct
		return res
	}
	code, ok := s.rejects[b.MediaSource.URL]
	if !ok && signedURLExpired(b.MediaSource.URL, s.now()) {
		// Pinterest fetches the image: a Discord CDN URL whose
		// signature expired answers 404 to it.
		code, ok = CodeImageFetchFailed, true
	}
	if ok {
		msg := "Sorry, we could not fetch the image."
		if code == CodeImageInvalid {
			msg = "Sorry, the image is not valid."
		}
		res := errorResult(http.StatusForbidden, code, msg)
		res.account = acct
		return res
	}
	p := s.recordPinLocked(Pin{
		AccountID:   acct,
		BoardID:     b.BoardID,
		ImageURL:    b.MediaSource.URL,
		Link:        b.Link,
		Title:       b.Title,
		Description: b.Description,
		AltText:     b.AltText,
		CreatedAt:   s.now(),
	})
	return result{status: http.StatusCreated, account: acct, body: answerOf(p, a.username)}
}

// answerOf is p as Pinterest describes it to its owner, username.
func answerOf(p Pin, username string) pinAnswer {
	return pinAnswer{
		ID:          p.ID,
		CreatedAt:   p.CreatedAt.UTC().Format(time.RFC3339),
		BoardID:     p.BoardID,
		BoardOwner:  ownerJSON{Username: username},
		Link:        p.Link,
		Title:       p.Title,
		Description: p.Description,
		AltText:     p.AltText,
		IsOwner:     true,
		Media:       mediaJSON{MediaType: "image"},
	}
}

type boardJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Privacy     string    `json:"privacy"`
	Owner       ownerJSON `json:"owner"`
}

type boardsAnswer struct {
	Items    []boardJSON `json:"items"`
	Bookmark *string     `json:"bookmark"`
}

// listBoards serves GET /v5/boards with page_size (default 25, at most
// 250) and bookmark pagination. The bookmark is opaque to clients.
func (s *Server) listBoards(r *http.Request, stuck bool) result {
	acct, bad := s.authenticate(r, "boards:read")
	if bad != nil {
		return *bad
	}
	q := r.URL.Query()
	size := 25
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 250 {
			return errorResult(http.StatusBadRequest, CodeInvalidParameters, "page_size must be between 1 and 250.")
		}
		size = n
	}
	off := 0
	if bm := q.Get("bookmark"); bm != "" {
		n, ok := decodeBookmark(bm)
		if !ok {
			return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid bookmark.")
		}
		off = n
	}

	s.mu.Lock()
	a := s.accounts[acct]
	all := a.boards
	start := min(off, len(all))
	end := min(off+size, len(all))
	items := make([]boardJSON, 0, end-start)
	for _, b := range all[start:end] {
		items = append(items, boardJSON{ID: b.ID, Name: b.Name, Privacy: b.Privacy, Owner: ownerJSON{Username: a.username}})
	}
	more := end < len(all)
	s.mu.Unlock()

	var next *string
	switch {
	case stuck && q.Get("bookmark") != "":
		bm := q.Get("bookmark")
		next = &bm
	case stuck || more:
		bm := encodeBookmark(off + size)
		next = &bm
	}
	return result{status: http.StatusOK, account: acct, body: boardsAnswer{Items: items, Bookmark: next}}
}

func encodeBookmark(off int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(off)))
}

func decodeBookmark(bm string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(bm)
	if err != nil {
		return 0, false
	}
	v, ok := strings.CutPrefix(string(b), "offset:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

type accountAnswer struct {
	AccountType    string `json:"account_type"`
	ID             string `json:"id"`
	Username       string `json:"username"`
	ProfileImage   string `json:"profile_image"`
	WebsiteURL     string `json:"website_url"`
	About          string `json:"about"`
	BoardCount     int    `json:"board_count"`
	PinCount       int    `json:"pin_count"`
	FollowerCount  int    `json:"follower_count"`
	FollowingCount int    `json:"following_count"`
}

// userAccount serves GET /v5/user_account.
func (s *Server) userAccount(r *http.Request) result {
	acct, bad := s.authenticate(r, "user_accounts:read")
	if bad != nil {
		return *bad
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[acct]
	pins := 0
	for _, p := range s.pins {
		if p.AccountID == acct {
			pins++
		}
	}
	return result{status: http.StatusOK, account: acct, body: accountAnswer{
		AccountType:  "PINNER",
		ID:           a.id,
		Username:     a.username,
		ProfileImage: a.profileImage,
		BoardCount:   len(a.boards),
		PinCount:     pins,
	}}
}

// signedURLExpired reports whether u is a signed Discord CDN URL (its ex
// parameter the hexadecimal Unix second it expires at) that has expired
// at now.
func signedURLExpired(u string, now time.Time) bool {
	pu, err := url.Parse(u)
	if err != nil || (pu.Host != "cdn.discordapp.com" && pu.Host != "media.discordapp.net") {
		return false
	}
	ex := pu.Query().Get("ex")
	if ex == "" {
		return false
	}
	sec, err := strconv.ParseInt(ex, 16, 64)
	return err == nil && !now.Before(time.Unix(sec, 0))
}
