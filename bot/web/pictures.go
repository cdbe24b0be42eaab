package web

import (
	"context"
	"encoding/base64"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of a picture fetch.
const (
	// maxPictureBytes bounds a picture; a 128-pixel avatar takes a few
	// kilobytes.
	maxPictureBytes = 256 << 10
	// pictureTimeout bounds a picture's fetch: the page can do without.
	pictureTimeout = 5 * time.Second
)

// pictureTypes are the types a picture may have, as sniffed.
var pictureTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// pictures fetches the confirmation page's pictures, server side, so that
// the page loads nothing from anywhere: each becomes a data: URL.
type pictures struct {
	sources []string
	client  *http.Client
}

func newPictures(sources []string, client *http.Client) pictures {
	if sources == nil {
		sources = DefaultAvatarSources
	}
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return pictures{sources: slices.Clone(sources), client: client}
}

// fetchBoth fetches two pictures at once.
func (p pictures) fetchBoth(ctx context.Context, a, b string) (template.URL, template.URL) {
	var pa, pb template.URL
	var wg sync.WaitGroup
	wg.Go(func() { pa = p.fetch(ctx, a) })
	pb = p.fetch(ctx, b)
	wg.Wait()
	return pa, pb
}

// fetch returns the picture at u as a data: URL, or "" when u is not
// under one of the sources, cannot be had within pictureTimeout, is too
// large, or is not a PNG, JPEG, GIF or WebP image.
func (p pictures) fetch(ctx context.Context, u string) template.URL {
	if !p.allowed(u) {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, pictureTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ""
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPictureBytes+1))
	if err != nil || len(body) > maxPictureBytes {
		return ""
	}
	ct := http.DetectContentType(body)
	if !slices.Contains(pictureTypes, ct) {
		return ""
	}
	// The type was sniffed from the bytes and the rest is base64: the
	// URL can hold nothing but a picture.
	return template.URL("data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(body))
}

// allowed reports whether u is an absolute http(s) address, without user
// information, under one of the sources.
func (p pictures) allowed(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.User != nil {
		return false
	}
	for _, s := range p.sources {
		if s != "" && strings.HasPrefix(u, s) {
			return true
		}
	}
	return false
}
