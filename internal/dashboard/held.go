package dashboard

import "time"

// HeldReader reads the linked accounts that stay held after a restore
// because Pinterest's listing of their pins could not be read (package
// internal/rebuild): every other account was rebuilt from its listing
// and pins again. It must not block on anything slow.
type HeldReader interface {
	// Held returns those accounts, by account ID.
	Held() []HeldAccount
}

// HeldAccount is a linked account held after a restore because its pins
// on Pinterest could not be listed.
type HeldAccount struct {
	Account  string   `json:"account"`
	Username string   `json:"username,omitempty"`
	LinkedBy []string `json:"linked_by,omitempty"`
	// Reason says why its listing could not be read.
	Reason string `json:"reason"`
	// Since is when it first could not be read, Retry when it is tried
	// again, Until when the hold ends for it all the same (engine time).
	Since time.Time `json:"since"`
	Retry time.Time `json:"retry"`
	Until time.Time `json:"until"`
}

// held sets the held accounts data shows.
func (d *Dashboard) held(data *Data) {
	if d.heldReader == nil {
		return
	}
	data.Held = d.heldReader.Held()
}
