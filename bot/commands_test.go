package bot

import (
	"fmt"
	"slices"
	"testing"

	"github.com/disgoorg/disgo/discord"
)

// tableEvent builds the interaction a user's click or command makes for
// an entry of the command table (its autocomplete when autocomplete), and
// the command name or custom ID and types it carries.
func tableEvent(t *testing.T, c command, autocomplete bool) (e discord.Interaction, path string, typ discord.InteractionType) {
	t.Helper()
	var data string
	switch {
	case autocomplete:
		typ, path = discord.InteractionTypeAutocomplete, "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":1,"options":[]}`, c.name)
	case c.slash != nil:
		typ, path = discord.InteractionTypeApplicationCommand, "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":1}`, c.name)
	case c.message != nil:
		typ, path = discord.InteractionTypeApplicationCommand, "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":3,"target_id":"9","resolved":{"messages":{"9":{"id":"9","channel_id":"3"}}}}`, c.name)
	default:
		path = c.id
		if c.param {
			path += "/1001"
		}
		typ = discord.InteractionTypeComponent
		data = fmt.Sprintf(`{"custom_id":%q,"component_type":3,"values":["x"]}`, path)
	}
	raw := fmt.Sprintf(`{"id":"1","application_id":"2","type":%d,"token":"t","version":1,"channel_id":"3","data":%s}`, typ, data)
	if typ == discord.InteractionTypeComponent {
		raw = fmt.Sprintf(`{"id":"1","application_id":"2","type":%d,"token":"t","version":1,"channel_id":"3","message":{"id":"9","channel_id":"3"},"data":%s}`, typ, data)
	}
	i, err := discord.UnmarshalInteraction([]byte(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return i, path, typ
}

// TestCommandTable: every entry of the command table is routed, has its
// metrics label (none counted as "other"), and is registered with Discord
// when it is a command; the labels are the ones the dashboards know.
func TestCommandTable(t *testing.T) {
	labels := InteractionLabels()
	var got, names []string
	for _, c := range commandTable() {
		handlers := 0
		for _, set := range []bool{c.slash != nil, c.message != nil, c.component != nil} {
			if set {
				handlers++
			}
		}
		if handlers != 1 || c.label == "" || (c.name == "") == (c.id == "") || (c.create != nil) != (c.name != "") {
			t.Errorf("entry %q/%q: %d handlers, label %q, create set %v: want one handler, a label, a name or an ID, a definition for a command",
				c.name, c.id, handlers, c.label, c.create != nil)
			continue
		}
		if c.create != nil {
			names = append(names, c.name)
			if n := c.create(pinRule{limit: 100, short: "12h", adj: "12-hour"}).CommandName(); n != c.name {
				t.Errorf("entry %q defines the command %q", c.name, n)
			}
		}
		kinds := []bool{false}
		if c.autocomplete != nil {
			kinds = append(kinds, true)
		}
		for _, auto := range kinds {
			e, path, typ := tableEvent(t, c, auto)
			entry, account, ok := route(e)
			if !ok || entry.name != c.name || entry.id != c.id {
				t.Errorf("%s (type %d) is routed to %q/%q (%v), want its own entry", path, typ, entry.name, entry.id, ok)
			}
			if want := map[bool]string{true: "1001"}[c.param]; account != want {
				t.Errorf("%s: account %q, want %q", path, account, want)
			}
			name := interactionName(e)
			if !slices.Contains(labels, name) || name == "other" {
				t.Errorf("%s (type %d) is counted as %q, not one of %q", path, typ, name, labels)
			}
			got = append(got, name)
		}
	}
	if len(got) != len(labels) {
		t.Errorf("the table's interactions are counted as %q, InteractionLabels %q", got, labels)
	}
	want := []string{
		"pin", "pin_autocomplete", "pin_message", "settings", "settings_switch", "settings_board",
		"settings_when_full", "link", "unlink", "unlink_autocomplete", "queue", "queue_all", "queue_message", "server",
		"autopin", "autopin_autocomplete",
	}
	if !slices.Equal(labels, want) {
		t.Errorf("InteractionLabels %q, want %q", labels, want)
	}
	var synced []string
	for _, c := range commands(pinRule{limit: 100, short: "12h", adj: "12-hour"}) {
		synced = append(synced, c.CommandName())
	}
	if !slices.Equal(synced, names) {
		t.Errorf("registered %q, the table's commands %q", synced, names)
	}

	// What is not in the table is neither routed nor labelled.
	e, _, _ := tableEvent(t, command{id: "/nothing"}, false)
	if _, _, ok := route(e); ok || interactionName(e) != "other" {
		t.Errorf("an unknown component is routed or labelled %q", interactionName(e))
	}
	for _, c := range ConsoleCommands() {
		if c.Verb == "" || (c.Name == "") == (c.CustomID == "") {
			t.Errorf("console command %+v: want a verb, and a name or a custom ID", c)
		}
	}
}
