package pinteresttest

import (
	"net/http"
	"strconv"
	"time"
)

// Fault changes how the Server answers the next matching requests. Faults
// are matched in the order they were injected; the first one that matches
// a request applies to it, and only one fault applies to a request.
type Fault struct {
	// Method matches the request method; "" matches any.
	Method string
	// Path matches the URL path exactly, such as PathPins; "" matches any.
	Path string
	// Listings, when set, matches every listing of pins instead of
	// Method and Path: GET /v5/pins and GET /v5/boards/{board_id}/pins
	// of any board, and nothing else.
	Listings bool
	// Times is how many matching requests the fault applies to; 0 means
	// one, a negative value every matching request until ClearFaults.
	Times int

	// Status, when not 0, is the status answered, with a JSON body
	// {"code": Code, "message": Message} in Pinterest's error format.
	Status  int
	Code    int
	Message string
	// Header is added to the answer, whatever its status.
	Header http.Header

	// Delay holds the request this long (real time) before the endpoint
	// runs, or until the client gives up or the Server closes.
	Delay time.Duration
	// Until, when not nil, holds the request until the channel is closed
	// (by the test: no real time is involved), or until the client gives
	// up or the Server closes; the endpoint then runs and answers as
	// usual. With Delay too, the hold lasts until both have passed.
	Until <-chan struct{}
	// Hang holds the answer back until the client gives up or the Server
	// closes: the request is never answered and has no effect, whatever
	// the other fields say.
	Hang bool
	// Detached makes the request's effect happen even if the client gives
	// up while it is held by Delay or Until, as Pinterest carries on with
	// a request it has received: the Server keeps holding it, then runs
	// the endpoint (a pin is created with the Server's clock at that
	// moment, a token rotated) and drops the answer, which nobody would
	// read; the request's record keeps Status 0. A client still waiting
	// when the hold ends is answered normally. When the Server closes
	// during the hold, the request has no effect.
	Detached bool
	// Arrived, when not nil, receives a value once the request has arrived
	// and been recorded, before any hold. The send gives up when the
	// client does (a Detached request then stays held).
	Arrived chan<- struct{}
	// GaveUp, when not nil, receives a value when the Server sees the
	// client give up while the request is held (by the send on Arrived,
	// Delay, Until or Hang). A Detached request stays held meanwhile:
	// receive from GaveUp, or make it buffered. The send gives up when
	// the Server closes.
	GaveUp chan<- struct{}
	// Done, when not nil, receives a value once the Server is finished
	// with the request: its answer sent or dropped, its effect (if any)
	// recorded in Pins and its Request record final. It is not sent for
	// a request cut short by Close: the send gives up when the Server
	// closes.
	Done chan<- struct{}
	// AfterEffect runs the endpoint first, with all its effects (a pin is
	// recorded, a token rotated), then answers with Status as if it had
	// failed: the ambiguous outcome.
	AfterEffect bool
	// StuckBookmark makes GET /v5/boards and the pin listings answer
	// with the request's own bookmark (or, for a first page, a fresh one)
	// as the next bookmark, so that a client following bookmarks would
	// loop.
	StuckBookmark bool
}

// Pinterest error codes the Server uses.
const (
	// CodeInvalidParameters is Pinterest's code for a malformed request.
	CodeInvalidParameters = 1
	// CodeAuthenticationFailed answers a missing, unknown or expired
	// access token.
	CodeAuthenticationFailed = 2
	// CodeInsufficientScope answers a token lacking a needed scope.
	CodeInsufficientScope = 3
	// CodeRateLimited is Pinterest's documented code for an exceeded rate
	// limit.
	CodeRateLimited = 8
	// CodeNotPermitted answers access to another user's board.
	CodeNotPermitted = 29
	// CodeImageFetchFailed and CodeImageInvalid answer an image Pinterest
	// could not fetch and an invalid image. Assumption: these codes are
	// not in Pinterest's published API description.
	CodeImageFetchFailed = 233
	CodeImageInvalid     = 235
	// CodeInvalidGrant answers an unknown, used or expired authorization
	// code or refresh token.
	CodeInvalidGrant = 283
)

// SpamMessage is the message of the SpamBlocked fault, modelled on what
// Pinterest says when its spam defences block an action.
const SpamMessage = "Sorry! You've hit a block we have in place to combat spam. Please try again later."

// RateLimited returns a fault answering one request to path with 429,
// CodeRateLimited and x-ratelimit-limit, x-ratelimit-remaining and, when
// reset is not "", x-ratelimit-reset set to reset verbatim (so that tests
// can send garbage).
func RateLimited(path, reset string) Fault {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", "100")
	h.Set("X-Ratelimit-Remaining", "0")
	if reset != "" {
		h.Set("X-Ratelimit-Reset", reset)
	}
	return Fault{
		Path:    path,
		Status:  http.StatusTooManyRequests,
		Code:    CodeRateLimited,
		Message: "This request exceeded a rate limit. This can happen if the client exceeds one of the published rate limits within a short time window.",
		Header:  h,
	}
}

// SpamBlocked returns a fault answering one request to path with the 429 of
// Pinterest's spam defences: CodeRateLimited with SpamMessage. Assumption:
// Pinterest documents no distinct code for spam blocks.
func SpamBlocked(path string) Fault {
	f := RateLimited(path, "")
	f.Message = SpamMessage
	return f
}

// RetryAfter returns a copy of f that also sends Retry-After: seconds.
func RetryAfter(f Fault, seconds int) Fault {
	h := f.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Retry-After", strconv.Itoa(seconds))
	f.Header = h
	return f
}

// ServerError returns a fault answering one request to path with status,
// normally a 5xx.
func ServerError(path string, status int) Fault {
	return Fault{Path: path, Status: status, Message: http.StatusText(status)}
}

// ExpiredToken returns a fault answering one request to path with the 401
// Pinterest gives an expired access token.
func ExpiredToken(path string) Fault {
	return Fault{
		Path:    path,
		Status:  http.StatusUnauthorized,
		Code:    CodeAuthenticationFailed,
		Message: "Authentication failed.",
	}
}

// Hang returns a fault that never answers one request to path.
func Hang(path string) Fault { return Fault{Path: path, Hang: true} }

// Delay returns a fault that answers one request to path normally after d.
func Delay(path string, d time.Duration) Fault { return Fault{Path: path, Delay: d} }

// HoldUntil returns a fault that holds one request to path until until is
// closed, then answers it normally: a slow request whose end the test
// decides, such as a token refresh held while fake clocks move on.
func HoldUntil(path string, until <-chan struct{}) Fault {
	return Fault{Path: path, Until: until}
}

// DelayedCreate returns a fault modelling a pin created after the client
// gave up: one POST /v5/pins is held until until is closed, then the pin is
// created, with the Server's clock at that moment as its CreatedAt, whether
// or not the client is still waiting. A client still waiting gets the
// normal answer; otherwise the answer is dropped and the request's record
// keeps Status 0, its At the arrival time and its PinID the pin's id. Set
// Done on the returned fault to learn when the pin exists.
func DelayedCreate(until <-chan struct{}) Fault {
	return Fault{Method: http.MethodPost, Path: PathPins, Until: until, Detached: true}
}

// CreatedButFailed returns a fault that creates the pin of one POST
// /v5/pins and then answers status as if it had failed.
func CreatedButFailed(status int) Fault {
	return Fault{
		Method:      http.MethodPost,
		Path:        PathPins,
		Status:      status,
		Message:     http.StatusText(status),
		AfterEffect: true,
	}
}

// StuckBookmark returns a fault under which GET /v5/boards keeps answering
// the same bookmark, for every request until ClearFaults.
func StuckBookmark() Fault {
	return Fault{Method: http.MethodGet, Path: PathBoards, Times: -1, StuckBookmark: true}
}

// ListingFailed returns a fault answering one listing of pins (GET
// /v5/pins, GET /v5/boards/{board_id}/pins) with status, such as a 5xx
// or a 403; see RateLimited for a 429, with Listings set.
func ListingFailed(status int) Fault {
	return Fault{Listings: true, Status: status, Message: http.StatusText(status)}
}

// ListingLate returns a fault that holds one listing of pins until until
// is closed, then answers it as the ledger stands at that moment: a
// listing answered late, while the test moves the clocks or makes pins
// (set Arrived to learn when it is held).
func ListingLate(until <-chan struct{}) Fault {
	return Fault{Listings: true, Until: until}
}

// activeFault is an injected fault with its remaining count.
type activeFault struct {
	Fault
	left int // < 0: unlimited
}

func (f *activeFault) matches(method, path string) bool {
	if f.Listings {
		return isListing(method, path)
	}
	return (f.Method == "" || f.Method == method) && (f.Path == "" || f.Path == path)
}

// isListing reports whether method and path are those of a listing of
// pins.
func isListing(method, path string) bool {
	if method != http.MethodGet {
		return false
	}
	_, board := boardOfPinsPath(path)
	return path == PathPins || board
}
