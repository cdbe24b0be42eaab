package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// TestLimitSettings reads PINBOT_HTTP_RATE, PINBOT_OPERATOR_RATE,
// PINBOT_TRUSTED_PROXIES and PINBOT_USER_RATE, and names the setting at fault in each error.
func TestLimitSettings(t *testing.T) {
	base := map[string]string{
		discordTokenEnv:              testToken,
		"PINTEREST_CLIENT_ID":        "app-id",
		"PINTEREST_CLIENT_SECRET":    testSecret,
		"PINBOT_PUBLIC_URL":          "https://pinbot.example/",
		"PINBOT_ENCRYPTION_KEY_FILE": "pinbot.key",
	}
	tests := []struct {
		env     map[string]string
		args    []string
		http    gcra.Rate
		op      gcra.Rate
		user    gcra.Rate
		proxies []netip.Prefix
		errs    []string
	}{
		0: {http: gcra.Rate{Limit: 20, Period: time.Minute}, op: gcra.Rate{Limit: 120, Period: time.Minute}, user: gcra.Rate{Limit: 60, Period: 10 * time.Minute}},
		1: {env: map[string]string{"PINBOT_HTTP_RATE": "5/s,burst=20", "PINBOT_USER_RATE": "off", "PINBOT_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7"},
			http: gcra.Rate{Limit: 5, Period: time.Second, Burst: 20}, op: gcra.Rate{Limit: 120, Period: time.Minute},
			proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}},
		2: {args: []string{"--http-rate", "off", "--user-rate", "100/1h", "--operator-rate", "off"}, user: gcra.Rate{Limit: 100, Period: time.Hour}},
		5: {env: map[string]string{"PINBOT_OPERATOR_RATE": "10/s"}, http: gcra.Rate{Limit: 20, Period: time.Minute},
			op: gcra.Rate{Limit: 10, Period: time.Second}, user: gcra.Rate{Limit: 60, Period: 10 * time.Minute}},
		6: {args: []string{"--operator-rate", "lots"}, errs: []string{`invalid --operator-rate "lots": want N/PERIOD`}},
		3: {env: map[string]string{"PINBOT_HTTP_RATE": "fast", "PINBOT_USER_RATE": "0/m", "PINBOT_TRUSTED_PROXIES": "10.0.0.0/33"},
			errs: []string{
				`invalid PINBOT_HTTP_RATE "fast": want N/PERIOD with an optional ",burst=B", such as "20/m", "60/10m" or "5/s,burst=20" (PERIOD is s, m, h, d or a Go duration such as 90s); or off`,
				`invalid PINBOT_USER_RATE "0/m": limit 0 is not between 1 and 1048576; or off`,
				`invalid PINBOT_TRUSTED_PROXIES "10.0.0.0/33": "10.0.0.0/33" is not an address or CIDR prefix such as 10.0.0.0/8`,
			}},
		4: {args: []string{"--user-rate", "60/fortnight"}, errs: []string{`invalid --user-rate "60/fortnight": "fortnight" is not a period`}},
	}
	for i, tt := range tests {
		env := with(base, tt.env)
		st := newSettings(func(k string) string { return env[k] })
		fs := newFlagSet("")
		st.bind(fs, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		st.noteFlags(fs)
		b, err := st.validateBot()
		if len(tt.errs) > 0 {
			if err == nil {
				t.Errorf("step %d: no error, want %q", i, tt.errs)
				continue
			}
			for _, w := range tt.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("step %d: error %q lacks %q", i, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("step %d: %v", i, err)
			continue
		}
		if b.httpRate != tt.http || b.operatorRate != tt.op || b.userRate != tt.user || !slices.Equal(b.trustedProxies, tt.proxies) {
			t.Errorf("step %d: http %v operator %v user %v proxies %v, want %v %v %v %v", i, b.httpRate, b.operatorRate, b.userRate, b.trustedProxies, tt.http, tt.op, tt.user, tt.proxies)
		}
	}
}
