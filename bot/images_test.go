package bot

import (
	"testing"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/discordtest"
)

func TestImagesOf(t *testing.T) {
	png, mp4 := "image/png", "video/mp4"
	alt := "a cat"
	m := discord.Message{
		Attachments: []discord.Attachment{
			{Filename: "a.png", ContentType: &png, URL: "https://cdn.discordapp.com/a.png?ex=1", Description: &alt},
			{Filename: "v.mp4", ContentType: &mp4, URL: "https://cdn.discordapp.com/v.mp4"},
			{Filename: "b.JPG", URL: "https://cdn.discordapp.com/b.JPG"},
			{Filename: "notes.txt", URL: "https://cdn.discordapp.com/notes.txt"},
			{Filename: "dup.png", ContentType: &png, URL: "https://cdn.discordapp.com/a.png?ex=1"},
		},
		Embeds: []discord.Embed{
			{Type: discord.EmbedTypeImage, URL: "https://i.example/c.gif", Thumbnail: &discord.EmbedResource{URL: "https://i.example/c.gif"}},
			{Type: discord.EmbedTypeRich, Title: "rich", Image: &discord.EmbedResource{URL: "https://i.example/d.png"}},
			{Type: discord.EmbedTypeGifV, URL: "https://tenor.example/x", Image: &discord.EmbedResource{URL: "https://tenor.example/x.gif"}},
			{Type: discord.EmbedTypeLink, URL: "https://news.example/"},
		},
	}
	got := imagesOf(m)
	want := []string{"https://cdn.discordapp.com/a.png?ex=1", "https://cdn.discordapp.com/b.JPG", "https://i.example/c.gif", "https://i.example/d.png"}
	if len(got) != len(want) {
		t.Fatalf("images = %+v, want %v", got, want)
	}
	for i := range want {
		if got[i].URL != want[i] {
			t.Errorf("image %d = %s, want %s", i, got[i].URL, want[i])
		}
	}
	if got[0].Alt != alt || got[3].Alt != "rich" {
		t.Errorf("alt texts = %q, %q", got[0].Alt, got[3].Alt)
	}
	if n := len(imagesOf(discord.Message{Content: "no pictures"})); n != 0 {
		t.Errorf("text-only message has %d images", n)
	}
}

// TestPinImageEmbedPinsThePicture: for an image embed Discord puts the
// link the user posted in url (for image hosts such as Gyazo or Imgur, a
// web page) and the picture itself in thumbnail.url. The pin must be made
// from the picture, not from the page.
func TestPinImageEmbedPinsThePicture(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	page, picture := "https://gyazo.com/0123456789abcdef", "https://i.gyazo.com/0123456789abcdef.png"
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, Content: page, Embeds: []discord.Embed{{
		Type:      discord.EmbedTypeImage,
		URL:       page,
		Thumbnail: &discord.EmbedResource{URL: picture, ProxyURL: "https://images-ext-1.discordapp.net/external/x/" + picture, Width: 640, Height: 480},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := w.pin(alice, m.ID.String())
	must(t, text, "1 pinned.")
	pins := w.ps.PinsFor("1001")
	if len(pins) != 1 {
		t.Fatalf("%d pins, want 1", len(pins))
	}
	if pins[0].ImageURL != picture {
		t.Fatalf("pin made from %q, want the embed's picture %q", pins[0].ImageURL, picture)
	}
}
