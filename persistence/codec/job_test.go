package codec

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

var codecJobs = []persistence.Job{
	{ID: 1, State: persistence.JobWaiting, Enqueued: t0, Payload: []byte(`{"m":1}`)},
	{ID: 7, State: persistence.JobRunning, Enqueued: t0, Slot: 42, Deadline: t0 + 300_000, Payload: []byte("p")},
	{ID: math.MaxUint64, State: persistence.JobDone, Enqueued: math.MinInt64, Slot: math.MaxUint64,
		Finished: math.MaxInt64, ExpiresAt: t0 + 1, Payload: []byte{0, 1, 2}, Result: []byte("pinned")},
	{ID: 2, State: persistence.JobDone, Finished: t0},
}

func TestJobRoundTrip(t *testing.T) {
	for _, j := range codecJobs {
		got, err := DecodeJob(AppendJob(nil, &j))
		if err != nil {
			t.Fatalf("%+v: %v", j, err)
		}
		if !reflect.DeepEqual(got, j) {
			t.Errorf("round trip: got %+v, want %+v", got, j)
		}
	}
}

func TestJobCorrupt(t *testing.T) {
	good := AppendJob(nil, &codecJobs[0])
	cases := map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"flipped":   append(append([]byte(nil), good[:3]...), append([]byte{good[3] ^ 0xff}, good[4:]...)...),
		"id 0":      AppendJob(nil, &persistence.Job{State: persistence.JobWaiting}),
		"state 0":   AppendJob(nil, &persistence.Job{ID: 1}),
		"state 9":   AppendJob(nil, &persistence.Job{ID: 1, State: 9}),
		"other":     AppendHighWater(nil, 5),
	}
	for name, b := range cases {
		if _, err := DecodeJob(b); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}
