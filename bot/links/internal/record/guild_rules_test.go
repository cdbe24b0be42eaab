package record

import "testing"

// TestIsAutopinKey: only g/<guild id>/autopin is a server's rules record;
// the server's settings and other keys are not.
func TestIsAutopinKey(t *testing.T) {
	for key, want := range map[string]bool{
		AutopinKey("900"):    true,
		"g/900/autopin":      true,
		GuildKey("900"):      false,
		"g/autopin":          false,
		"g/900/x/autopin":    false,
		"u/900/autopin":      false,
		"g/900/autopin/more": false,
	} {
		if got := IsAutopinKey(key); got != want {
			t.Errorf("IsAutopinKey(%q) = %v, want %v", key, got, want)
		}
	}
}
