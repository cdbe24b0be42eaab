package clusterrpc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"regexp"
	"strconv"
)

// MinKeySize is the shortest shared key accepted, in bytes.
const MinKeySize = 32

// pathPrefix starts the path of every call: pathPrefix + method.
const pathPrefix = "/pinbot-rpc/1/"

// pingMethod is the method of Client.Ping, answered by every server
// itself; registered methods cannot start with "_".
const pingMethod = "_ping"

// Headers of a request.
const (
	hFrom    = "Pinbot-From"    // caller's member id
	hTo      = "Pinbot-To"      // incarnation of the server the call is for
	hTime    = "Pinbot-Time"    // caller's clock at sending, Unix nanoseconds
	hNonce   = "Pinbot-Nonce"   // nonceSize random bytes, base64url
	hTimeout = "Pinbot-Timeout" // time left to the caller's deadline, microseconds; 0: none
	hMAC     = "Pinbot-Mac"     // HMAC-SHA256, base64url
)

// Headers of an answer (hFrom and hMAC too).
const (
	hIncarnation = "Pinbot-Incarnation" // the server's incarnation
	hRecv        = "Pinbot-Recv"        // server's clock at receipt, Unix nanoseconds
	hSend        = "Pinbot-Send"        // server's clock at answering, Unix nanoseconds
	hOutcome     = "Pinbot-Outcome"     // wireOK, wireError or wireRefused
	hCode        = "Pinbot-Code"        // a handler error's code, or a refusal's reason
)

// Outcomes on the wire.
const (
	wireOK      = "ok"
	wireError   = "error"
	wireRefused = "refused"
)

const (
	nonceSize       = 16
	incarnationSize = 16
	maxIDLen        = 128
)

// methodRE is what a registered method name looks like.
var methodRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validID reports whether s may be a member id: 1 to maxIDLen bytes that
// fit in a header value.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

var b64 = base64.RawURLEncoding

// macKey derives the key the MACs are made with from the shared key, so
// that the shared key serves this purpose alone (clusterconf's key check
// uses another label).
func macKey(shared []byte) []byte {
	m := hmac.New(sha256.New, shared)
	m.Write([]byte("pinbot cluster rpc: mac key 1"))
	return m.Sum(nil)
}

// macWriter feeds fields to a MAC, each with its length first, so that
// no two different field lists give the same input.
type macWriter struct{ h hash.Hash }

func newMAC(key []byte, label string) macWriter {
	w := macWriter{hmac.New(sha256.New, key)}
	w.str(label)
	return w
}

func (w macWriter) bytes(p []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(p)))
	w.h.Write(n[:])
	w.h.Write(p)
}

func (w macWriter) str(s string) { w.bytes([]byte(s)) }

func (w macWriter) int(v int64) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(v))
	w.h.Write(n[:])
}

func (w macWriter) sum() []byte { return w.h.Sum(nil) }

// request is a call's authenticated fields.
type request struct {
	method  string
	from    string
	to      string // incarnation, base64url; empty for a ping to anyone
	time    int64  // Unix nanoseconds
	nonce   []byte
	timeout int64 // microseconds; 0: none
	body    []byte
}

// mac returns the request's MAC under key.
func (r *request) mac(key []byte) []byte {
	w := newMAC(key, "pinbot-rpc/1 request")
	w.str(r.method)
	w.str(r.from)
	w.str(r.to)
	w.int(r.time)
	w.bytes(r.nonce)
	w.int(r.timeout)
	w.bytes(r.body)
	return w.sum()
}

// answer is an answer's authenticated fields.
type answer struct {
	status      int
	from        string
	incarnation string
	recv, send  int64 // Unix nanoseconds
	outcome     string
	code        string
	body        []byte
}

// mac returns the answer's MAC under key for the request whose MAC is
// reqMAC. The server puts in reqMAC the MAC it computed over the request
// as it received it, not the one the request claims: so an answer can be
// checked only by the client that sent that very request with the same
// key, and no answer to a tampered copy passes for the answer to the
// original.
func (a *answer) mac(key, reqMAC []byte) []byte {
	w := newMAC(key, "pinbot-rpc/1 answer")
	w.bytes(reqMAC)
	w.int(int64(a.status))
	w.str(a.from)
	w.str(a.incarnation)
	w.int(a.recv)
	w.int(a.send)
	w.str(a.outcome)
	w.str(a.code)
	w.bytes(a.body)
	return w.sum()
}

var errHeader = errors.New("clusterrpc: malformed header")

// parseInt reads a decimal int64 header value.
func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errHeader
	}
	return v, nil
}

// parseB64 reads a base64url header value of exactly n bytes.
func parseB64(s string, n int) ([]byte, error) {
	p, err := b64.DecodeString(s)
	if err != nil || len(p) != n {
		return nil, errHeader
	}
	return p, nil
}
