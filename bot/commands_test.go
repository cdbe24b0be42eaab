package bot

import (
	"fmt"
	"slices"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/events"
	"github.com/disgoorg/disgo/handler"
)

// tableEvent builds the interaction a user's click or command makes for
// an entry of the command table (its autocomplete when autocomplete), and
// the path and types the router matches it by, as handler.Mux does.
func tableEvent(t *testing.T, c command, autocomplete bool) (e *handler.InteractionEvent, path string, typ discord.InteractionType, sub int) {
	t.Helper()
	var data string
	switch {
	case autocomplete:
		typ, sub, path = discord.InteractionTypeAutocomplete, int(discord.ApplicationCommandTypeSlash), "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":1,"options":[]}`, c.name)
	case c.slash != nil:
		typ, sub, path = discord.InteractionTypeApplicationCommand, int(discord.ApplicationCommandTypeSlash), "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":1}`, c.name)
	case c.message != nil:
		typ, sub, path = discord.InteractionTypeApplicationCommand, int(discord.ApplicationCommandTypeMessage), "/"+c.name
		data = fmt.Sprintf(`{"id":"7","name":%q,"type":3,"target_id":"9","resolved":{"messages":{"9":{"id":"9","channel_id":"3"}}}}`, c.name)
	default:
		path = c.id
		if c.param {
			path += "/1001"
		}
		typ, sub = discord.InteractionTypeComponent, int(discord.ComponentTypeStringSelectMenu)
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
	return &handler.InteractionEvent{InteractionCreate: &events.InteractionCreate{Interaction: i}}, path, typ, sub
}

// TestCommandTable: every entry of the command table is routed, has its
// metrics label (none counted as "other"), and is registered with Discord
// when it is a command; the labels are the ones the dashboards know.
func TestCommandTable(t *testing.T) {
	m := handler.New()
	(&Bot{}).route(m)
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
			e, path, typ, sub := tableEvent(t, c, auto)
			if !m.Match(path, typ, sub) {
				t.Errorf("%s (type %d) is not routed", path, typ)
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
		"settings_when_full", "link", "unlink", "unlink_autocomplete", "queue", "queue_all", "queue_message",
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
	e, _, _, _ := tableEvent(t, command{id: "/nothing"}, false)
	if m.Match("/nothing", discord.InteractionTypeComponent, int(discord.ComponentTypeStringSelectMenu)) || interactionName(e) != "other" {
		t.Errorf("an unknown component is routed or labelled %q", interactionName(e))
	}
	for _, c := range ConsoleCommands() {
		if c.Verb == "" || (c.Name == "") == (c.CustomID == "") {
			t.Errorf("console command %+v: want a verb, and a name or a custom ID", c)
		}
	}
}
