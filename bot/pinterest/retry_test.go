package pinterest

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		base, maxDelay time.Duration
		k              int
		want           time.Duration
	}{
		0: {250 * ms, 5 * time.Second, 0, 0},
		1: {250 * ms, 5 * time.Second, 1, 250 * ms},
		2: {250 * ms, 5 * time.Second, 2, 500 * ms},
		3: {250 * ms, 5 * time.Second, 3, time.Second},
		4: {250 * ms, 5 * time.Second, 5, 4 * time.Second},
		5: {250 * ms, 5 * time.Second, 6, 5 * time.Second},
		6: {250 * ms, 5 * time.Second, 1000, 5 * time.Second},
		7: {0, 5 * time.Second, 3, 0},
		8: {time.Second, 500 * ms, 1, 500 * ms},
		9: {250 * ms, 5 * time.Second, -1, 0},
	}
	for i, tt := range tests {
		if got := backoff(tt.base, tt.maxDelay, tt.k); got != tt.want {
			t.Errorf("step %d: backoff(%v, %v, %d) = %v want %v", i, tt.base, tt.maxDelay, tt.k, got, tt.want)
		}
	}
}
