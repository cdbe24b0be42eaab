package benchlat

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 501}, {0.99, 991}, {0.999, 1000}, {1, 1000}} {
		if got := Quantile(lat, c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v ms, want %v", c.q, got, c.want)
		}
	}
}
