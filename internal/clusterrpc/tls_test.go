package clusterrpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/clusterrpc"
)

// selfSigned returns a server config with a certificate for 127.0.0.1
// and a client config that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "pinbot member"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}}}
	return server, &tls.Config{RootCAs: pool}
}

func TestCallOverTLS(t *testing.T) {
	srvConf, cliConf := selfSigned(t)
	p := startPeer(t, peerConfig{opts: []clusterrpc.Option{clusterrpc.WithTLS(srvConf)}})
	var h2tls atomic.Int64
	c := newClient(t, "alice", nil, clusterrpc.WithTLS(cliConf), hook(func(next http.RoundTripper, r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil && resp.ProtoMajor == 2 && resp.TLS != nil {
			h2tls.Add(1)
		}
		return resp, err
	}).option())
	got, err := c.Call(context.Background(), p.addr, "work", []byte("secret"))
	if err != nil || string(got) != "alice:secret" {
		t.Fatalf("call = %q, %v", got, err)
	}
	if n := h2tls.Load(); n != 2 { // the ping, then the call
		t.Errorf("%d exchanges over HTTP/2 with TLS, want 2", n)
	}
	// A client in the clear cannot talk to it, and knows it sent nothing.
	plain := newClient(t, "bob", nil)
	if _, err := plain.Call(context.Background(), p.addr, "work", nil); !clusterrpc.IsRetryable(err) {
		t.Errorf("call in the clear to a TLS server: %v, want ErrNotSent", err)
	}
	if _, err := clusterrpc.NewServer(testKey, "m", nil, zerolog.Nop(), clusterrpc.WithTLS(&tls.Config{})); err == nil {
		t.Error("NewServer accepted a TLS config without a certificate")
	}
}
