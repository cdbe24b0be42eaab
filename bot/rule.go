package bot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// pinRule names the engine's rule (actors.Config's Limit and Window) in
// what users read. Under the defaults the texts are the spec's word for
// word: "Pin limit reached (100/12h)", "12-hour pin count: X/100".
type pinRule struct {
	limit int
	short string // the window briefly: "12h"
	adj   string // the window as an adjective: "12-hour"
}

// ruleOf is the rule of an engine configured with cfg; shown, when not
// 0, is the window users read (Config.Window).
func ruleOf(cfg actors.Config, shown time.Duration) pinRule {
	w := cfg.Window
	if shown > 0 {
		w = shown
	}
	return pinRule{limit: cfg.Limit, short: WindowShort(w), adj: WindowAdjective(w)}
}

// WindowShort writes the window length w briefly, as pinbot's texts do
// after the limit ("100/12h"): in whole days from two days on ("7d"),
// otherwise in hours, minutes, seconds and milliseconds, largest first and
// the zero ones left out ("12h", "1h30m", "20s", "1s500ms").
func WindowShort(w time.Duration) string {
	if w <= 0 {
		return "0s"
	}
	if days, ok := wholeDays(w); ok {
		return strconv.FormatInt(days, 10) + "d"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := w / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			w -= n * u.d
		}
	}
	return b.String()
}

// WindowAdjective writes the window length w as an adjective, as in
// "12-hour pin count": in the largest unit it is a whole number of, days
// from two days on ("7-day", "36-hour", "90-minute", "20-second",
// "1500-millisecond").
func WindowAdjective(w time.Duration) string {
	if days, ok := wholeDays(w); ok {
		return fmt.Sprintf("%d-day", days)
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if w >= u.d && w%u.d == 0 {
			return fmt.Sprintf("%d-%s", w/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d-millisecond", w.Milliseconds())
}

// wholeDays returns w in days when it is a whole number of them and at
// least two: a day is "24h" to most people.
func wholeDays(w time.Duration) (int64, bool) {
	const day = 24 * time.Hour
	return int64(w / day), w >= 2*day && w%day == 0
}
