package bot

// QueuedPinInfo is what an operator's listing shows of a queued pin, read
// from its job's payload (actors.Job.Payload).
type QueuedPinInfo struct {
	// MessageURL is the link of the message the picture is in.
	MessageURL string
	// Image is the picture's position among the message's pictures,
	// counting from 1, and Images how many it had when queued.
	Image, Images int
	// User is the Discord user who queued it.
	User string
	// Board is the board's id, BoardName its name when known.
	Board, BoardName string
}

// DescribeQueuedPin reads a queued pin's payload; it fails on a payload
// the bot could not run either.
func DescribeQueuedPin(payload []byte) (QueuedPinInfo, error) {
	q, err := decodeQueuedPin(payload)
	if err != nil {
		return QueuedPinInfo{}, err
	}
	return QueuedPinInfo{
		MessageURL: q.ref().jumpURL(),
		Image:      q.Image, Images: q.Images,
		User:  q.User.String(),
		Board: q.Board, BoardName: q.BoardName,
	}, nil
}

// QueuedPinResult is what became of a queued pin, read from its done
// job's result (actors.Job.Result).
type QueuedPinResult struct {
	// Outcome is "pinned", "failed", "unknown" (the pin may exist and
	// counts toward the limit), "duplicate" (pinned to the board before:
	// nothing sent) or "canceled".
	Outcome string
	// PinURL is the pin's address, when pinned or pinned before; Why says
	// why it was not.
	PinURL, Why string
}

// DescribeQueuedPinResult reads a done job's result; it reports false
// when no outcome was recorded.
func DescribeQueuedPinResult(result []byte) (QueuedPinResult, bool) {
	r, ok := decodeJobResult(result)
	if !ok {
		return QueuedPinResult{}, false
	}
	return QueuedPinResult{Outcome: r.Outcome, PinURL: r.PinURL, Why: r.Why}, true
}
