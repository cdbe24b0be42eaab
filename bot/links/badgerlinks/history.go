package badgerlinks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
)

// The pictures pinned to each board (see links.History), one record each:
//
//	h/<account id>/<board id>/<picture key>  the pin's address, and until when it is remembered
//
// A record carries a Badger TTL at its until, so that the store forgets
// it without a sweep; Badger's TTL follows the wall clock, and reads
// check until against the caller's now as well.
const historyPrefix = "h/"

func historyKey(accountID, boardID, key string) string {
	return historyPrefix + accountID + "/" + boardID + "/" + key
}

// historyRecord is stored under h/<account>/<board>/<key>.
type historyRecord struct {
	V     int    `json:"v"`
	URL   string `json:"url"`
	Until int64  `json:"u"` // Unix ms
}

func (r *historyRecord) version() int { return r.V }

func (r *historyRecord) check() error {
	if r.URL == "" {
		return fmt.Errorf("%w: no pin address", links.ErrInvalid)
	}
	return nil
}

// checkHistoryIDs checks the ids of a history call.
func checkHistoryIDs(accountID, boardID string, keys []string) error {
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

// PinnedBefore returns, of keys, those remembered as pinned to boardID of
// accountID until after now: key → the pin's address.
func (s *Store) PinnedBefore(ctx context.Context, accountID, boardID string, keys []string, now time.Time) (map[string]string, error) {
	if err := checkHistoryIDs(accountID, boardID, keys); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := s.view(ctx, "pinned before", func(txn *badger.Txn) error {
		for _, k := range keys {
			var rec historyRecord
			ok, err := getRecord(txn, historyKey(accountID, boardID, k), &rec)
			if err != nil {
				return err
			}
			if ok && rec.Until > now.UnixMilli() {
				out[k] = rec.URL
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RememberPinned remembers, in one write, that each of pins was pinned to
// boardID of accountID, until its Until.
func (s *Store) RememberPinned(ctx context.Context, accountID, boardID string, pins []links.PinnedPicture) error {
	keys := make([]string, len(pins))
	for i, p := range pins {
		keys[i] = p.Key
		switch {
		case strings.TrimSpace(p.PinURL) == "":
			return fmt.Errorf("%w: picture %s: no pin address", links.ErrInvalid, p.Key)
		case p.Until.IsZero():
			return fmt.Errorf("%w: picture %s: no until", links.ErrInvalid, p.Key)
		}
	}
	if err := checkHistoryIDs(accountID, boardID, keys); err != nil {
		return err
	}
	if len(pins) == 0 {
		return nil
	}
	return s.update(ctx, "remember pinned", func(txn *badger.Txn) error {
		for _, p := range pins {
			rec := historyRecord{V: recordVersion, URL: p.PinURL, Until: p.Until.UnixMilli()}
			if err := setRecordTTL(txn, historyKey(accountID, boardID, p.Key), &rec, max(time.Until(p.Until), time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
}
