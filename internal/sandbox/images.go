package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"strings"
	"time"
)

// Size of the demo images, in pixels.
const imageWidth, imageHeight = 96, 64

// imagePrefix is the path under which the image server serves the demo
// images: /img/<message id>/<file name>.
const imagePrefix = "/img/"

// imageServer serves the demo images: a PNG of one color, derived from
// its path, for every path under imagePrefix ending in .png. It stands in
// for Discord's CDN; nothing in the sandbox needs to fetch the images, but
// a person can open the URLs the bot sent to Pinterest.
type imageServer struct {
	srv  *http.Server
	base string // http://127.0.0.1:port
	done chan struct{}
}

// startImageServer listens on a loopback port and serves the images.
func startImageServer() (*imageServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: image server: %w", err)
	}
	s := &imageServer{
		srv: &http.Server{
			Handler:           http.HandlerFunc(serveImage),
			ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout:      10 * time.Second,
		},
		base: "http://" + ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after close
	}()
	return s, nil
}

// url returns the address of an image in a folder: a demo message's ID,
// or a posted message's folder (see Sandbox.post).
func (s *imageServer) url(folder, name string) string {
	return s.base + imagePrefix + folder + "/" + name
}

// close stops the server and waits for it.
func (s *imageServer) close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sandbox: image server: %w", err)
	}
	return nil
}

func serveImage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !strings.HasPrefix(r.URL.Path, imagePrefix) || !strings.HasSuffix(r.URL.Path, ".png") {
		http.NotFound(w, r)
		return
	}
	body := demoPNG(r.URL.Path)
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(body)
}

// demoPNG returns a PNG of one color chosen by name.
func demoPNG(name string) []byte {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	v := h.Sum32()
	c := color.RGBA{R: uint8(v), G: uint8(v >> 8), B: uint8(v >> 16), A: 0xff}
	img := image.NewRGBA(image.Rect(0, 0, imageWidth, imageHeight))
	for y := range imageHeight {
		for x := range imageWidth {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	// Encoding an in-memory RGBA image into a buffer cannot fail.
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}
