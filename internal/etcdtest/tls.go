package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Certs are the PEM files of a throwaway authority for a TLS test: its
// certificate, a server certificate for 127.0.0.1 and localhost and a
// client certificate, both signed by it, and their keys.
type Certs struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewCerts makes a new authority and its server and client
// certificates, valid for a day around now, in a temporary directory of
// the test. Each call makes another authority.
func NewCerts(t TB) Certs {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "etcdtest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("etcdtest: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("etcdtest: CA certificate: %v", err)
	}
	c := Certs{CAFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, c.CAFile, "CERTIFICATE", caDER)

	leaf := func(name string, usage []x509.ExtKeyUsage) (certFile, keyFile string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: serial(t),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("etcdtest: %s certificate: %v", name, err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatalf("etcdtest: %s key: %v", name, err)
		}
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "PRIVATE KEY", kder)
		return certFile, keyFile
	}
	// etcd's own gateway dials its members with the server certificate,
	// so that one serves as a client certificate too.
	c.ServerCert, c.ServerKey = leaf("server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ClientCert, c.ClientKey = leaf("client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	return c
}

// ClientTLS serves the members' clients over TLS alone, on https://
// URLs (SecureEndpoints), with certs' server certificate, and admits
// only clients whose certificate certs' authority signed: etcd's
// --cert-file, --key-file, --trusted-ca-file and --client-cert-auth.
// The members must be Start's.
func ClientTLS(certs Certs) Option {
	return func(cfg *embed.Config) {
		cfg.ClientTLSInfo.CertFile = certs.ServerCert
		cfg.ClientTLSInfo.KeyFile = certs.ServerKey
		cfg.ClientTLSInfo.TrustedCAFile = certs.CAFile
		cfg.ClientTLSInfo.ClientCertAuth = true
		for _, urls := range [][]url.URL{cfg.ListenClientUrls, cfg.AdvertiseClientUrls} {
			for i := range urls {
				urls[i].Scheme = "https"
			}
		}
	}
}

// SecureEndpoints returns the client URLs of every member as https://
// URLs: those of members started with ClientTLS.
func (c *Cluster) SecureEndpoints() []string {
	eps := c.Endpoints()
	for i, e := range eps {
		eps[i] = "https://" + strings.TrimPrefix(e, "http://")
	}
	return eps
}

func newKey(t TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("etcdtest: key: %v", err)
	}
	return k
}

func serial(t TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("etcdtest: serial: %v", err)
	}
	return n
}

func writePEM(t TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
}
