package clusterrpc

import (
	"bytes"
	"testing"
)

func TestRequestMACCoversEveryField(t *testing.T) {
	key := macKey(bytes.Repeat([]byte{7}, MinKeySize))
	base := func() request {
		return request{method: "pin", from: "m1", to: "inc", time: 42, nonce: bytes.Repeat([]byte{1}, nonceSize), timeout: 5, body: []byte("body")}
	}
	want := func() []byte { r := base(); return r.mac(key) }()
	for name, change := range map[string]func(*request){
		"method":  func(r *request) { r.method = "pim" },
		"from":    func(r *request) { r.from = "m2" },
		"to":      func(r *request) { r.to = "inx" },
		"time":    func(r *request) { r.time++ },
		"nonce":   func(r *request) { r.nonce = bytes.Repeat([]byte{2}, nonceSize) },
		"timeout": func(r *request) { r.timeout = 0 },
		"body":    func(r *request) { r.body = []byte("bodY") },
		// Moving bytes between fields changes the MAC too.
		"boundary": func(r *request) { r.method, r.from = "pinm", "1" },
	} {
		r := base()
		change(&r)
		if bytes.Equal(r.mac(key), want) {
			t.Errorf("changing %s leaves the request's MAC as it was", name)
		}
	}
	r := base()
	if bytes.Equal(r.mac(macKey(bytes.Repeat([]byte{8}, MinKeySize))), want) {
		t.Error("another key gives the same MAC")
	}
}

func TestAnswerMACCoversEveryField(t *testing.T) {
	key := macKey(bytes.Repeat([]byte{7}, MinKeySize))
	reqMAC := []byte("request mac")
	base := func() answer {
		return answer{status: 200, from: "m1", incarnation: "inc", recv: 1, send: 2, outcome: wireOK, code: "", body: []byte("done")}
	}
	want := func() []byte { a := base(); return a.mac(key, reqMAC) }()
	for name, change := range map[string]func(*answer){
		"status":      func(a *answer) { a.status = 401 },
		"from":        func(a *answer) { a.from = "m2" },
		"incarnation": func(a *answer) { a.incarnation = "inx" },
		"recv":        func(a *answer) { a.recv++ },
		"send":        func(a *answer) { a.send++ },
		"outcome":     func(a *answer) { a.outcome = wireRefused },
		"code":        func(a *answer) { a.code = "x" },
		"body":        func(a *answer) { a.body = []byte("fail") },
	} {
		a := base()
		change(&a)
		if bytes.Equal(a.mac(key, reqMAC), want) {
			t.Errorf("changing %s leaves the answer's MAC as it was", name)
		}
	}
	a := base()
	if bytes.Equal(a.mac(key, []byte("another request")), want) {
		t.Error("the answer's MAC does not depend on the request's")
	}
}
