package bot

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/disgoorg/snowflake/v2"
)

// queuedPin is the payload of a queued pin: which picture of which message
// to pin, for whom, where. It never holds the picture's URL: Discord's
// attachment URLs are signed and expire, so the message is fetched again
// when the pin runs.
type queuedPin struct {
	Guild   snowflake.ID `json:"g"`
	Channel snowflake.ID `json:"c"`
	Message snowflake.ID `json:"m"`
	// Image is the picture's position among the message's pictures,
	// counting from 1, and Images how many it had when queued.
	Image  int          `json:"i"`
	Images int          `json:"n"`
	User   snowflake.ID `json:"u"` // who queued it
	// From is the channel /pin ran in: where results go when the user's
	// direct messages are closed.
	From      snowflake.ID `json:"f"`
	Board     string       `json:"b"`
	BoardName string       `json:"bn,omitempty"`
	// Interaction is the /pin that queued it, for the run's log lines;
	// 0 in payloads stored before it was kept.
	Interaction snowflake.ID `json:"x,omitempty"`
	// Again pins the picture even if it was pinned to the board before.
	Again bool `json:"a,omitempty"`
	// Key names the picture in the history of pins (image.Key), so that
	// it is found in the message even if an edit moved it; "" in
	// payloads stored before it was kept, found by Image then.
	Key string `json:"k,omitempty"`
}

func (q queuedPin) encode() []byte {
	b, err := json.Marshal(q)
	if err != nil {
		panic(err) // a struct of IDs, ints and strings always encodes
	}
	return b
}

func decodeQueuedPin(b []byte) (queuedPin, error) {
	var q queuedPin
	if err := json.Unmarshal(b, &q); err != nil {
		return queuedPin{}, fmt.Errorf("queued pin: %w", err)
	}
	if q.Channel == 0 || q.Message == 0 || q.Image < 1 || q.User == 0 || q.Board == "" {
		return queuedPin{}, errors.New("queued pin: missing fields")
	}
	return q, nil
}

// imageIn finds the picture among imgs, the message's pictures now: by
// its key when it has one, else by its position.
func (q queuedPin) imageIn(imgs []image) (image, bool) {
	if q.Key != "" {
		i := slices.IndexFunc(imgs, func(im image) bool { return im.Key == q.Key })
		if i < 0 {
			return image{}, false
		}
		return imgs[i], true
	}
	if q.Image > len(imgs) {
		return image{}, false
	}
	return imgs[q.Image-1], true
}

// ref is the message the pin comes from.
func (q queuedPin) ref() messageRef {
	return messageRef{GuildID: q.Guild, ChannelID: q.Channel, MessageID: q.Message, Raw: q.Message.String()}
}

// jobResult is what became of a queued pin, kept with the done job.
type jobResult struct {
	// Outcome is "pinned", "failed", "unknown" (the pin may exist and
	// counts), "duplicate" (pinned to the board before) or "canceled".
	Outcome string `json:"o"`
	PinURL  string `json:"p,omitempty"`
	Why     string `json:"w,omitempty"`
	// Reason is why it was not pinned, for the metrics (failReasons);
	// results stored before it was kept have none.
	Reason string `json:"r,omitempty"`
}

// Outcomes of a queued pin.
const (
	jobPinned  = "pinned"
	jobFailed  = "failed"
	jobUnknown = "unknown"
	// jobDuplicate: pinned to the board before (PinURL); nothing sent.
	jobDuplicate = "duplicate"
)

func (r jobResult) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

func decodeJobResult(b []byte) (jobResult, bool) {
	var r jobResult
	if json.Unmarshal(b, &r) != nil || r.Outcome == "" {
		return jobResult{}, false
	}
	return r, true
}
