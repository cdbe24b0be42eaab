package bot

import (
	"net/url"
	"path"
	"strings"

	"github.com/disgoorg/disgo/discord"
)

// image is one picture of a message, which becomes one pin.
type image struct {
	URL string
	// Alt describes the picture: the attachment's description (Discord's
	// alt text) or the embed's text; "" when there is none.
	Alt string
	// Name is the attachment's file name, "" for embeds.
	Name string
	// Key names the picture in the history of pins (see imageKey).
	Key string
}

// imageExts are the file extensions taken as images when Discord sent no
// content type.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".avif": true}

// imagesOf lists the pictures of m, in order: attachments whose content
// type is an image (or, without a content type, whose name ends like
// one), then image embeds (a link to a picture, with its thumbnail) and
// the images of rich embeds. Videos, gifv embeds and other files are left
// out; a URL seen twice counts once.
func imagesOf(m discord.Message) []image {
	var out []image
	seen := map[string]bool{}
	add := func(im image) {
		if im.URL == "" || seen[im.URL] || !isWebURL(im.URL) {
			return
		}
		if im.Key == "" {
			im.Key = imageKey("", im.URL)
		}
		seen[im.URL] = true
		out = append(out, im)
	}
	for _, a := range m.Attachments {
		ct := ""
		if a.ContentType != nil {
			ct = strings.ToLower(*a.ContentType)
		}
		isImage := strings.HasPrefix(ct, "image/")
		if ct == "" {
			isImage = imageExts[strings.ToLower(path.Ext(a.Filename))]
		}
		if !isImage {
			continue
		}
		im := image{URL: a.URL, Name: a.Filename, Key: imageKey(a.ID.String(), "")}
		if a.Description != nil {
			im.Alt = *a.Description
		}
		add(im)
	}
	for _, e := range m.Embeds {
		switch {
		case e.Type == discord.EmbedTypeImage:
			// Discord puts the picture in the thumbnail: for a link to an
			// image host's page (Gyazo, Imgur), the embed's URL is the
			// page and the thumbnail the image; for a direct image link
			// they are the same.
			u := ""
			if e.Thumbnail != nil && isWebURL(e.Thumbnail.URL) {
				u = e.Thumbnail.URL
			} else if e.Image != nil && isWebURL(e.Image.URL) {
				u = e.Image.URL
			} else {
				u = e.URL
			}
			add(image{URL: u, Alt: e.Description})
		case e.Image != nil && e.Type != discord.EmbedTypeGifV && e.Type != discord.EmbedTypeVideo:
			alt := e.Image.Description
			if alt == "" {
				alt = e.Title
			}
			add(image{URL: e.Image.URL, Alt: alt})
		}
	}
	return out
}

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
