package clusterrpc

import (
	"errors"
	"fmt"
)

// The two kinds of failed call. Every error of Client.Call that is not a
// *RemoteError from a handler that ran wraps exactly one of them.
var (
	// ErrNotSent: the peer's handler did not run and never will for this
	// call (the connection was never obtained, the call's context ended
	// first, the method is unknown there, or the handler refused it with
	// Refuse). The call may be made again, here or elsewhere.
	ErrNotSent = errors.New("clusterrpc: not sent")
	// ErrOutcomeUnknown: the call may have reached the peer's handler,
	// which may have done its work or may still do it (a timeout or a
	// dropped connection after sending, an answer that failed
	// authentication, a refusal that cannot prove the handler never ran).
	// Making the call again could do the work twice.
	ErrOutcomeUnknown = errors.New("clusterrpc: outcome unknown")
	// ErrBadAnswer is wrapped, beside ErrOutcomeUnknown, when an answer
	// failed authentication: tampered with, forged, from a peer with
	// another key, or not a pinbot answer at all.
	ErrBadAnswer = errors.New("clusterrpc: answer failed authentication")
)

// IsRetryable reports whether err, from Client.Call, proves that the
// peer's handler did not run, so that the call may be made again (at the
// same peer or at another). It is false for nil, for a handler's own
// error, and for every outcome that is unknown.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrNotSent) && !errors.Is(err, ErrOutcomeUnknown)
}

// CodeInternal is the code of a handler's error that is not a
// *RemoteError, and of a handler that panicked.
const CodeInternal = "internal"

// CodeAnswerTooLarge is the code of a handler's answer that exceeded the
// server's body limit: the handler ran, its answer was dropped.
const CodeAnswerTooLarge = "answer_too_large"

// RemoteError is a handler's error as its caller receives it. A handler
// chooses the code with NewError or Refuse; any other error arrives with
// CodeInternal and its text as the message.
type RemoteError struct {
	// Peer is the member id of the peer that answered (empty on the
	// handler's side).
	Peer string
	// Code is a short machine-readable word chosen by the handler.
	Code string
	// Message is for people.
	Message string
	// Refused: the handler refused the call before doing any work (Refuse),
	// so errors.Is(err, ErrNotSent) holds and the call may be made
	// elsewhere, such as at an account's new owner.
	Refused bool
}

// NewError returns a handler error that reaches the caller as a
// *RemoteError with code and message. The handler may have done part of
// its work: the caller does not retry it.
func NewError(code, message string) error {
	return &RemoteError{Code: code, Message: message}
}

// Refuse returns a handler error that tells the caller the handler did no
// work (such as "not owner" or "moved"): it reaches the caller as a
// *RemoteError with Refused set, which is ErrNotSent. A handler returns
// it only when it changed nothing.
func Refuse(code, message string) error {
	return &RemoteError{Code: code, Message: message, Refused: true}
}

func (e *RemoteError) Error() string {
	what := "failed"
	if e.Refused {
		what = "refused"
	}
	peer := ""
	if e.Peer != "" {
		peer = " " + e.Peer
	}
	return fmt.Sprintf("clusterrpc: peer%s %s the call: %s: %s", peer, what, e.Code, e.Message)
}

// Is makes a refusal ErrNotSent.
func (e *RemoteError) Is(target error) bool { return e.Refused && target == ErrNotSent }

// Why a server refused a request before any handler saw it: the reasons
// of a *RefusalError and of Observer.Refused.
const (
	// ReasonMalformed: the request is not a pinbot call (path, headers).
	ReasonMalformed = "malformed"
	// ReasonTooLarge: the body exceeds the server's limit.
	ReasonTooLarge = "too_large"
	// ReasonIncomplete: the body could not be read to its end (the caller
	// went away, or the read timed out); no answer is sent.
	ReasonIncomplete = "incomplete"
	// ReasonBadMAC: the request's MAC is wrong: forged, tampered with, or
	// made with another key.
	ReasonBadMAC = "bad_mac"
	// ReasonWrongIncarnation: the request was made for another server (a
	// peer's earlier process, or another member).
	ReasonWrongIncarnation = "wrong_incarnation"
	// ReasonStale: the request's timestamp is too far from the server's
	// clock (see WithWindow).
	ReasonStale = "stale"
	// ReasonReplay: the server has seen the request's nonce before.
	ReasonReplay = "replay"
	// ReasonUnknownMethod: no handler is registered for the method.
	ReasonUnknownMethod = "unknown_method"
)

// RefusalError is a server's refusal of a call before any handler saw
// it, in an authenticated answer. Only ReasonUnknownMethod proves the
// call was never run (it is ErrNotSent); every other reason is
// ErrOutcomeUnknown, since a copy of the same request may have been run
// earlier or elsewhere (a replay, or a request delayed past the window).
type RefusalError struct {
	// Peer is the member id of the peer that refused.
	Peer string
	// Reason is one of the Reason constants.
	Reason string
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("clusterrpc: peer %s refused the request: %s", e.Peer, e.Reason)
}

// Is makes the refusal ErrNotSent or ErrOutcomeUnknown, as its reason
// says.
func (e *RefusalError) Is(target error) bool {
	if e.Reason == ReasonUnknownMethod {
		return target == ErrNotSent
	}
	return target == ErrOutcomeUnknown
}
