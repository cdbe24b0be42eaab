package pinterest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Board is a board the account can pin to.
type Board struct {
	ID          string
	Name        string
	Description string
	// Privacy is PUBLIC, PROTECTED or SECRET.
	Privacy string
}

// boardsPageSize is the largest page Pinterest serves.
const boardsPageSize = 250

type boardJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Privacy     string `json:"privacy"`
}

type boardsPage struct {
	Items    []boardJSON `json:"items"`
	Bookmark *string     `json:"bookmark"`
}

// ListBoards returns the boards of the account of s (GET /boards), reading
// every page: 250 boards a page, following the bookmark until Pinterest
// sends a null or empty one. It fails rather than loop when a bookmark
// comes back a second time or when more than Config.MaxBoardPages pages
// would be needed.
func (c *Client) ListBoards(ctx context.Context, s *Session) ([]Board, error) {
	var boards []Board
	seen := make(map[string]bool)
	bookmark := ""
	for page := 1; ; page++ {
		if page > c.cfg.MaxBoardPages {
			return nil, fmt.Errorf("pinterest: GET /boards: more than %d pages", c.cfg.MaxBoardPages)
		}
		q := url.Values{"page_size": {strconv.Itoa(boardsPageSize)}}
		if bookmark != "" {
			q.Set("bookmark", bookmark)
		}
		var p boardsPage
		if err := c.do(ctx, s, call{method: http.MethodGet, path: "/boards", query: q}, &p); err != nil {
			return nil, err
		}
		for _, b := range p.Items {
			if b.ID == "" {
				return nil, fmt.Errorf("pinterest: GET /boards: board without id on page %d", page)
			}
			boards = append(boards, Board(b))
		}
		if p.Bookmark == nil || *p.Bookmark == "" {
			return boards, nil
		}
		bookmark = *p.Bookmark
		if seen[bookmark] {
			return nil, fmt.Errorf("pinterest: GET /boards: bookmark repeated on page %d", page)
		}
		seen[bookmark] = true
	}
}
