package schedule_test

import (
	"fmt"
	"time"

	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// Seven messages to one Discord channel at 12:00:02, two having gone out
// at 12:00:00.5 and 12:00:01: three go now, and each of the others as soon
// as the channel has sent fewer than five in the last five seconds.
func Example() {
	s := schedule.New[string]()
	rule := schedule.DiscordChannel()
	start := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{start.Add(500 * time.Millisecond), start.Add(time.Second)} {
		s.Submit(at, "channel:42", rule, schedule.JobID(100+i), "earlier")
		s.Due(at, nil)
	}
	now := start.Add(2 * time.Second)
	for i := range 7 {
		at, err := s.Submit(now, "channel:42", rule, schedule.JobID(i), fmt.Sprintf("message %d", i))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(i, at.Format("15:04:05.0"))
	}
	for {
		next, ok := s.Next()
		if !ok {
			break
		}
		for _, j := range s.Due(next, nil) {
			fmt.Println(j.At.Format("15:04:05.0"), j.Value)
		}
	}
	// Output:
	// 0 12:00:02.0
	// 1 12:00:02.0
	// 2 12:00:02.0
	// 3 12:00:05.5
	// 4 12:00:06.0
	// 5 12:00:07.0
	// 6 12:00:07.0
	// 12:00:02.0 message 0
	// 12:00:02.0 message 1
	// 12:00:02.0 message 2
	// 12:00:05.5 message 3
	// 12:00:06.0 message 4
	// 12:00:07.0 message 5
	// 12:00:07.0 message 6
}
