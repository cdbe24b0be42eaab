package record

import (
	"fmt"
	"strings"

	"github.com/pinbot/pinbot/bot/links"
)

// HistoryKey is the key of a picture pinned to a board (see
// links.History): h/<account id>/<board id>/<picture key>.
func HistoryKey(accountID, boardID, key string) string {
	return HistoryPrefix + accountID + "/" + boardID + "/" + key
}

// History is stored under h/<account>/<board>/<key>.
type History struct {
	V     int    `json:"v"`
	URL   string `json:"url"`
	Until int64  `json:"u"` // Unix ms
}

func (r *History) version() int { return r.V }

func (r *History) check() error {
	if r.URL == "" {
		return fmt.Errorf("%w: no pin address", links.ErrInvalid)
	}
	return nil
}

// NewHistory returns the record of p.
func NewHistory(p links.PinnedPicture) *History {
	return &History{V: Version, URL: p.PinURL, Until: p.Until.UnixMilli()}
}

// CheckHistoryIDs checks the ids of a history call.
func CheckHistoryIDs(accountID, boardID string, keys []string) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	if err := links.CheckID("board id", boardID); err != nil {
		return err
	}
	for _, k := range keys {
		if err := links.CheckID("picture key", k); err != nil {
			return err
		}
	}
	return nil
}

// CheckPinned checks the arguments of links.History.RememberPinned and
// returns the pictures' keys, in order.
func CheckPinned(accountID, boardID string, pins []links.PinnedPicture) ([]string, error) {
	keys := make([]string, len(pins))
	for i, p := range pins {
		keys[i] = p.Key
		switch {
		case strings.TrimSpace(p.PinURL) == "":
			return nil, fmt.Errorf("%w: picture %s: no pin address", links.ErrInvalid, p.Key)
		case p.Until.IsZero():
			return nil, fmt.Errorf("%w: picture %s: no until", links.ErrInvalid, p.Key)
		}
	}
	if err := CheckHistoryIDs(accountID, boardID, keys); err != nil {
		return nil, err
	}
	return keys, nil
}
