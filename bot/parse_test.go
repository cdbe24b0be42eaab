package bot

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/disgoorg/snowflake/v2"
)

const (
	testGuild   snowflake.ID = 1100000000000000001
	testChannel snowflake.ID = 1100000000000000002
)

func TestParseMessageRefs(t *testing.T) {
	g, c := testGuild, testChannel
	link := func(host string, g, c, m uint64) string {
		return fmt.Sprintf("https://%s/channels/%d/%d/%d", host, g, c, m)
	}
	tests := []struct {
		name    string
		in      string
		want    []messageRef // GuildID, ChannelID, MessageID compared
		wantErr string       // substring of the error
	}{
		{name: "one id", in: "1234567890123456789", want: []messageRef{{g, c, 1234567890123456789, ""}}},
		{name: "spaces commas newlines", in: " 11, 12\n13\t14,,15 ", want: []messageRef{{g, c, 11, ""}, {g, c, 12, ""}, {g, c, 13, ""}, {g, c, 14, ""}, {g, c, 15, ""}}},
		{name: "link", in: link("discord.com", uint64(g), 77, 88), want: []messageRef{{g, 77, 88, ""}}},
		{name: "canary ptb discordapp", in: link("canary.discord.com", uint64(g), 7, 1) + " " + link("ptb.discord.com", uint64(g), 7, 2) + "," + link("discordapp.com", uint64(g), 8, 3),
			want: []messageRef{{g, 7, 1, ""}, {g, 7, 2, ""}, {g, 8, 3, ""}}},
		{name: "angle brackets and trailing slash", in: "<" + link("discord.com", uint64(g), 7, 9) + "/>", want: []messageRef{{g, 7, 9, ""}}},
		{name: "ten", in: "1 2 3 4 5 6 7 8 9 10", want: []messageRef{{g, c, 1, ""}, {g, c, 2, ""}, {g, c, 3, ""}, {g, c, 4, ""}, {g, c, 5, ""}, {g, c, 6, ""}, {g, c, 7, ""}, {g, c, 8, ""}, {g, c, 9, ""}, {g, c, 10, ""}}},
		{name: "mixed id and link", in: "5 " + link("discord.com", uint64(g), 9, 6), want: []messageRef{{g, c, 5, ""}, {g, 9, 6, ""}}},

		{name: "empty", in: "", wantErr: "Give 1 to 10"},
		{name: "only separators", in: " ,\n, ", wantErr: "Give 1 to 10"},
		{name: "eleven", in: "1 2 3 4 5 6 7 8 9 10 11", wantErr: "You gave 11 messages; /pin takes at most 10"},
		{name: "word", in: "hello", wantErr: "`hello` is not a message ID or message link"},
		{name: "letters in id", in: "12a4", wantErr: "`12a4` is not a message ID"},
		{name: "negative", in: "-5", wantErr: "`-5` is not a message ID"},
		{name: "zero", in: "0", wantErr: "`0` is not a Discord message ID: Discord IDs start at 1."},
		{name: "overflow", in: "99999999999999999999", wantErr: "`99999999999999999999` is not a Discord message ID: it is larger than any Discord ID."},
		{name: "too long", in: "123456789012345678901", wantErr: "`123456789012345678901` is not a Discord message ID: it has 21 digits, and Discord IDs have at most 20."},
		{name: "27 digits", in: "123456789012345678901234567", wantErr: "`123456789012345678901234567` is not a Discord message ID: it has 27 digits, and Discord IDs have at most 20. Copy one with right click → Copy Message ID."},
		{name: "duplicate ids", in: "5 6 5", wantErr: "Message 5 is listed twice (`5`)"},
		{name: "duplicate id and link", in: "5 " + link("discord.com", uint64(g), uint64(c), 5), wantErr: "Message 5 is listed twice (`5` and `https://discord.com/channels/"},
		{name: "other server", in: link("discord.com", 42, 7, 8), wantErr: "points into another server"},
		{name: "dm link", in: "https://discord.com/channels/@me/7/8", wantErr: "points to a direct message"},
		{name: "foreign host", in: "https://evil.example/channels/1/2/3", wantErr: "is not a Discord message link"},
		{name: "no scheme", in: "discord.com/channels/1/2/3", wantErr: "is not a Discord message link"},
		{name: "channel link", in: fmt.Sprintf("https://discord.com/channels/%d/7", g), wantErr: "is not a link to a message"},
		{name: "bad part", in: fmt.Sprintf("https://discord.com/channels/%d/x/8", g), wantErr: "is not a valid message link"},
		{name: "backticks quoted safely", in: "a`b", wantErr: "`a'b` is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMessageRefs(tt.in, g, c)
			if tt.wantErr != "" {
				var ie *inputError
				if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseMessageRefs(%q) = %v, %v; want input error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseMessageRefs(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseMessageRefs(%q) gave %d refs, want %d: %+v", tt.in, len(got), len(tt.want), got)
			}
			for i := range got {
				w := tt.want[i]
				if got[i].GuildID != w.GuildID || got[i].ChannelID != w.ChannelID || got[i].MessageID != w.MessageID {
					t.Errorf("ref %d = %d/%d/%d, want %d/%d/%d", i, got[i].GuildID, got[i].ChannelID, got[i].MessageID, w.GuildID, w.ChannelID, w.MessageID)
				}
			}
		})
	}
}

// FuzzParseMessageRefs checks that any input either parses into 1 to 10
// distinct refs inside the invoking guild, which parse again the same from
// their links, or is refused with an input error; never a panic.
func FuzzParseMessageRefs(f *testing.F) {
	for _, s := range []string{
		"1", "1 2,3\n4", "https://discord.com/channels/1100000000000000001/2/3",
		"<https://ptb.discordapp.com/channels/1100000000000000001/2/3>", "5 5", "1 2 3 4 5 6 7 8 9 10 11",
		"https://discord.com/channels/@me/1/2", "https://discord.com/channels/9/1/2", "abc", "",
		"https://discord.com:443/channels/1100000000000000001/2/3?x#y", "18446744073709551615", "18446744073709551616",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		refs, err := parseMessageRefs(in, testGuild, testChannel)
		if err != nil {
			var ie *inputError
			if !errors.As(err, &ie) || err.Error() == "" {
				t.Fatalf("error %v is not a user-facing input error", err)
			}
			return
		}
		if len(refs) < 1 || len(refs) > MaxMessagesPerPin {
			t.Fatalf("%d refs accepted", len(refs))
		}
		seen := map[snowflake.ID]bool{}
		var links []string
		for _, r := range refs {
			if r.GuildID != testGuild {
				t.Fatalf("ref %+v outside the invoking guild", r)
			}
			if r.MessageID == 0 || r.ChannelID == 0 {
				t.Fatalf("ref %+v has a zero id", r)
			}
			if seen[r.MessageID] {
				t.Fatalf("message %d accepted twice", r.MessageID)
			}
			seen[r.MessageID] = true
			links = append(links, r.jumpURL())
		}
		again, err := parseMessageRefs(strings.Join(links, "\n"), testGuild, testChannel)
		if err != nil || len(again) != len(refs) {
			t.Fatalf("links %q of accepted refs do not parse back: %v", links, err)
		}
		for i := range again {
			if again[i].ChannelID != refs[i].ChannelID || again[i].MessageID != refs[i].MessageID {
				t.Fatalf("ref %d changed on re-parsing: %+v vs %+v", i, again[i], refs[i])
			}
		}
	})
}
