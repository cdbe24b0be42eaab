package bot

import (
	"testing"
)

// TestDescribeQueuedPin: an operator's listing reads a queued pin's
// payload and result as the bot wrote them, and an unreadable payload
// or a result without an outcome as such.
func TestDescribeQueuedPin(t *testing.T) {
	q := queuedPin{Guild: 1, Channel: 2, Message: 3, Image: 2, Images: 4, User: 5, Board: "b1", BoardName: "Cats"}
	got, err := DescribeQueuedPin(q.encode())
	want := QueuedPinInfo{MessageURL: "https://discord.com/channels/1/2/3", Image: 2, Images: 4, User: "5", Board: "b1", BoardName: "Cats"}
	if err != nil || got != want {
		t.Errorf("DescribeQueuedPin = %+v, %v; want %+v", got, err, want)
	}
	if _, err := DescribeQueuedPin([]byte(`{"c":2}`)); err == nil {
		t.Error("DescribeQueuedPin of a payload without a message: no error")
	}

	r := jobResult{Outcome: jobPinned, PinURL: "https://www.pinterest.com/pin/7/", Reason: "x"}
	if got, ok := DescribeQueuedPinResult(r.encode()); !ok || got != (QueuedPinResult{Outcome: jobPinned, PinURL: r.PinURL}) {
		t.Errorf("DescribeQueuedPinResult = %+v, %v", got, ok)
	}
	if _, ok := DescribeQueuedPinResult(nil); ok {
		t.Error("DescribeQueuedPinResult of no result: ok")
	}
}
