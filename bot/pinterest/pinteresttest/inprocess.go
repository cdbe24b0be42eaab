package pinteresttest

import (
	"net/http"
	"net/http/httptest"
)

// InProcess returns an HTTP client whose requests the Server answers in
// the calling goroutine, without a socket: for tests of code above the
// Pinterest client (the bot's command handlers) that need no network.
// The request's URL only selects the endpoint; its host is not dialed. A
// request whose context ends while it is held (Fault.Delay, Until) fails
// with the context's error, as over a connection.
func (s *Server) InProcess() *http.Client {
	return &http.Client{Transport: inProcess{s}}
}

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in := r.Clone(ctx)
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	t.s.serve(rec, in)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}
