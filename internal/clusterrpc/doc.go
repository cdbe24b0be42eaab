// Package clusterrpc carries the calls between the members of a pinbot
// cluster: the member that receives a Discord interaction forwards the
// account's work to the member owning the account, and every member
// measures its clock's offset to its peers' over the same calls. Calls are
// authenticated with a key the members share (the file named by
// PINBOT_CLUSTER_KEY_FILE, at least MinKeySize random bytes); a forged,
// tampered, replayed or misdirected call is refused, counted and logged,
// and so is an answer.
//
// # Usage
//
//	srv, err := clusterrpc.NewServer(key, "m1", clock, log)
//	err = srv.Handle("pin", func(ctx context.Context, from string, body []byte) ([]byte, error) {
//		if !owner(body) {
//			return nil, clusterrpc.Refuse("not_owner", "m3 owns it now")
//		}
//		return pin(ctx, body)
//	})
//	go srv.Serve(listener)
//	defer srv.Shutdown(ctx)
//
//	cli, err := clusterrpc.NewClient(key, "m2", clock)
//	answer, err := cli.Call(ctx, "10.0.0.1:7070", "pin", body)
//	switch {
//	case err == nil:                      // done
//	case clusterrpc.IsRetryable(err):     // not run: call again, here or at the new owner
//	case errors.Is(err, clusterrpc.ErrOutcomeUnknown): // may have run: count it as done
//	default:                              // the handler ran and failed (*RemoteError)
//	}
//	ok, worst := clusterrpc.WithinSkew(clusterrpc.Recent(cli.Offsets(), now.Add(-time.Minute)), time.Second)
//
// # Wire format
//
// HTTP/2: in the clear with prior knowledge on a plain listener (net/http's
// unencrypted HTTP/2), or over TLS when both ends have WithTLS. A Client
// keeps one connection per peer address and multiplexes its calls on it.
// A call is
//
//	POST /pinbot-rpc/1/METHOD
//	Pinbot-From:    caller's member id
//	Pinbot-To:      incarnation of the server the call is for (below)
//	Pinbot-Time:    caller's clock, Unix nanoseconds
//	Pinbot-Nonce:   16 random bytes, base64url
//	Pinbot-Timeout: microseconds left to the caller's deadline; 0: none
//	Pinbot-Mac:     HMAC-SHA256 of the above, the method and the body, base64url
//	body:           the request, up to WithMaxBody bytes
//
// and its answer
//
//	status:             200, or the refusal's (401, 404)
//	Pinbot-From:        server's member id
//	Pinbot-Incarnation: server's incarnation
//	Pinbot-Recv:        server's clock at receipt, Unix nanoseconds
//	Pinbot-Send:        server's clock at answering, Unix nanoseconds
//	Pinbot-Outcome:     ok, error or refused
//	Pinbot-Code:        the handler's error code, or the refusal's reason
//	Pinbot-Mac:         HMAC-SHA256 of the above, the body and the request's MAC
//	body:               the handler's answer, or its error message
//
// Every MAC input is a list of fields, each preceded by its length, under
// a label ("pinbot-rpc/1 request", "pinbot-rpc/1 answer"); the MAC key is
// derived from the shared key with a label of its own.
//
// # Authentication
//
// A server checks, in this order, and refuses with the reason named
// (Observer.Refused, a warning in its log with the remote address):
//
//   - the request's form (ReasonMalformed, 400) and body size
//     (ReasonTooLarge, 413);
//   - the MAC, over the request as received (ReasonBadMAC, 401);
//   - that the request is for this server (ReasonWrongIncarnation, 401).
//     Each Server draws a random incarnation when it is made. A client
//     learns the incarnation at an address from a ping's authenticated
//     answer, and binds every call to it: a call captured on its way to
//     one member is refused by every other, and by the same member's next
//     process, whose replay cache starts empty;
//   - the timestamp, against the server's clock, within WithWindow either
//     way (ReasonStale, 401);
//   - the nonce, not seen within the window (ReasonReplay, 401). The
//     replay cache forgets a nonce only once its timestamp is below the
//     window's lower edge, which never moves back (not even when the clock
//     is set back), so a forgotten request stays refused. It holds at most
//     WithReplayLimit nonces: beyond that it narrows the window rather
//     than forget a nonce still inside it;
//   - that a handler exists (ReasonUnknownMethod, 404). Handle is refused
//     once Serve has been called, so a method unknown stays unknown.
//
// The answer's MAC covers the MAC the server computed over the request it
// received, so only the client that sent that very request can check it:
// an answer cannot be forged, altered (its body, outcome, status or
// clocks), or moved to another request. A refusal of a request whose MAC
// did not verify, or whose body was not read, carries no MAC: no client
// could check it. The shared key proves membership, not identity: a
// member holding it can claim any member id.
//
// # What is retried, and why
//
// A pin is not idempotent, so a caller must know whether a failed call
// may have run. Every error of Call other than a handler's *RemoteError
// wraps ErrNotSent or ErrOutcomeUnknown; IsRetryable is true for the
// first only.
//
// ErrNotSent, the call was never run and never will be:
//
//   - the transport never had a connection for it (a failed dial or TLS
//     handshake: nothing was written);
//   - the context was over before it was sent, or the body over the
//     limit;
//   - the ping that learns the peer's incarnation failed: the call itself
//     was not sent (so a client with the wrong key gets ErrNotSent);
//   - the handler refused with Refuse (a *RemoteError with Refused set,
//     such as "not owner"): it ran once for this request's nonce, on this
//     server alone, and did nothing;
//   - ReasonUnknownMethod.
//
// ErrOutcomeUnknown, the handler may have run:
//
//   - a timeout, a cancellation or a dropped connection once the request
//     had a connection;
//   - an answer that failed authentication (also ErrBadAnswer), or was
//     over the size limit;
//   - a refusal for ReasonStale, ReasonReplay or ReasonWrongIncarnation:
//     each proves only that this delivery was refused, not that no copy
//     of the request ran (a copy delivered earlier, in time, or to the
//     server it was bound to). A duplicate delivery by the transport's own
//     retry arrives as ReasonReplay.
//
// A handler's other errors (NewError, or any error: CodeInternal) mean it
// ran and failed; whether it changed anything is the handler's to say.
//
// # Clock offsets
//
// Every authenticated answer, refusals included, carries the server's
// clock at receipt (t1) and at answering (t2); the client reads its own
// clock at sending (t0) and when the answer is in (t3, timed on Go's
// monotonic clock from t0) and computes, as NTP does,
//
//	offset = ((t1 - t0) + (t2 - t3)) / 2    the peer's clock minus ours
//	rtt    = (t3 - t0) - (t2 - t1)          the network's part of the call
//
// Whatever the split of rtt between the two legs, the true offset lies
// within offset ± rtt/2 (if neither clock's rate changed meanwhile).
// Offsets keeps the latest measure per peer member id; Ping measures one
// explicitly, even from a peer that refuses the ping as stale. WithinSkew
// checks |offset| + rtt/2 ≤ maxSkew for every peer, over the measures
// Recent keeps.
//
// # Limits
//
// Bodies and answers are bounded by WithMaxBody. The caller's deadline
// travels with the call (as time left, not as an instant, since the
// clocks differ): the handler's context ends that long after the
// request's receipt, or when the caller gives up (HTTP/2 resets the
// stream), or after WithMaxTimeout. The http.Server bounds headers
// (ReadHeaderTimeout, MaxHeaderBytes), each request's reading
// (ReadTimeout), each answer (WithMaxTimeout + WriteMargin) and idle
// connections (IdleTimeout); both ends ping a silent connection
// (PingInterval, PingTimeout).
package clusterrpc
