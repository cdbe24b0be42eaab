package app

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/etcdtest"
)

// TestEtcdConfigRefuses: each bad argument of EtcdConfig is an
// *EtcdConfigError naming its field and saying what is wrong.
func TestEtcdConfigRefuses(t *testing.T) {
	t.Parallel()
	certs, other := etcdtest.NewCerts(t), etcdtest.NewCerts(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	https := []string{"https://127.0.0.1:2379"}
	for _, c := range []struct {
		name      string
		endpoints []string
		cred      EtcdCredentials
		field     EtcdField
		want      string
	}{
		{"no endpoints", nil, EtcdCredentials{}, EtcdEndpoints, "none given"},
		{"not a URL", []string{"127.0.0.1:2379"}, EtcdCredentials{}, EtcdEndpoints, "not an http:// or https:// URL"},
		{"mixed schemes", []string{"https://a:2379", "http://b:2379"}, EtcdCredentials{}, EtcdEndpoints, "mix http:// and https://"},
		{"CA over http", []string{"http://127.0.0.1:2379"}, EtcdCredentials{CAFile: certs.CAFile}, EtcdEndpoints, "must be https://"},
		{"certificate over http", []string{"http://127.0.0.1:2379"}, EtcdCredentials{CertFile: certs.ClientCert, KeyFile: certs.ClientKey}, EtcdEndpoints, "must be https://"},
		{"CA unreadable", https, EtcdCredentials{CAFile: missing}, EtcdCAFile, "no such file"},
		{"CA without certificates", https, EtcdCredentials{CAFile: junk}, EtcdCAFile, "holds no PEM certificate"},
		{"CA a key", https, EtcdCredentials{CAFile: certs.ClientKey}, EtcdCAFile, "holds no PEM certificate"},
		{"certificate without key", https, EtcdCredentials{CertFile: certs.ClientCert}, EtcdKeyFile, "without its key"},
		{"key without certificate", https, EtcdCredentials{KeyFile: certs.ClientKey}, EtcdCertFile, "without its certificate"},
		{"certificate unreadable", https, EtcdCredentials{CertFile: missing, KeyFile: certs.ClientKey}, EtcdCertFile, "no such file"},
		{"certificate a key", https, EtcdCredentials{CertFile: certs.ClientKey, KeyFile: certs.ClientKey}, EtcdCertFile, "holds no PEM certificate"},
		{"key unreadable", https, EtcdCredentials{CertFile: certs.ClientCert, KeyFile: missing}, EtcdKeyFile, "no such file"},
		{"key a certificate", https, EtcdCredentials{CertFile: certs.ClientCert, KeyFile: certs.ClientCert}, EtcdKeyFile, "holds no PEM private key"},
		{"key of another certificate", https, EtcdCredentials{CertFile: certs.ClientCert, KeyFile: other.ClientKey}, EtcdKeyFile, "is not the key of the certificate"},
		{"username alone", https, EtcdCredentials{Username: "pinbot"}, EtcdPassword, "without a password"},
		{"password alone", https, EtcdCredentials{Password: "secret"}, EtcdUsername, "without a username"},
	} {
		_, err := EtcdConfig(c.endpoints, c.cred, 0)
		var ce *EtcdConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about the %v saying %q", c.name, err, c.field, c.want)
		}
	}
}

// TestEtcdConfigTLS: https:// endpoints get TLS 1.2 at least, the
// system's roots unless a CA is given, and the client certificate;
// http:// ones no TLS; the dial timeout defaults.
func TestEtcdConfigTLS(t *testing.T) {
	t.Parallel()
	certs := etcdtest.NewCerts(t)
	cfg, err := EtcdConfig([]string{"http://127.0.0.1:2379"}, EtcdCredentials{Username: "u", Password: "p"}, 0)
	if err != nil || cfg.TLS != nil || cfg.DialTimeout != DefaultEtcdDialTimeout || cfg.Username != "u" || cfg.Password != "p" {
		t.Fatalf("http:// endpoints: TLS %v, dial timeout %v, user %q, error %v; want no TLS, %v, the user", cfg.TLS, cfg.DialTimeout, cfg.Username, err, DefaultEtcdDialTimeout)
	}
	cfg, err = EtcdConfig([]string{"https://a:2379", "https://b:2379"}, EtcdCredentials{}, time.Second)
	if err != nil || cfg.TLS == nil || cfg.TLS.MinVersion != tls.VersionTLS12 || cfg.TLS.RootCAs != nil || len(cfg.TLS.Certificates) != 0 || cfg.DialTimeout != time.Second {
		t.Fatalf("https:// endpoints, no files: %+v, %v; want TLS 1.2 at least over the system's roots", cfg.TLS, err)
	}
	cfg, err = EtcdConfig([]string{"https://a:2379"}, EtcdCredentials{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}, 0)
	if err != nil || cfg.TLS == nil || cfg.TLS.MinVersion != tls.VersionTLS12 || cfg.TLS.RootCAs == nil || len(cfg.TLS.Certificates) != 1 {
		t.Fatalf("https:// endpoints with a CA and a client certificate: %+v, %v", cfg.TLS, err)
	}
}

// TestEtcdClientTLS: against an etcd that serves TLS alone and admits
// only the client certificates its CA signed, a client built by
// EtcdConfig with the right CA and certificate reads and writes; one
// without the certificate, with a certificate of another CA, or
// trusting another CA is refused within its dial timeout, saying why.
func TestEtcdClientTLS(t *testing.T) {
	t.Parallel()
	certs, other := etcdtest.NewCerts(t), etcdtest.NewCerts(t)
	etcd := etcdtest.Start(t, 1, etcdtest.ClientTLS(certs))
	eps := etcd.SecureEndpoints()
	const dial = 2 * time.Second

	right := EtcdCredentials{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}
	if err := etcdPut(t, eps, right, dial); err != nil {
		t.Fatalf("with the right CA and certificate: %v", err)
	}
	for _, c := range []struct {
		name string
		cred EtcdCredentials
		want string
	}{
		{"no client certificate", EtcdCredentials{CAFile: certs.CAFile}, "tls: certificate required"},
		{"a certificate of another CA", EtcdCredentials{CAFile: certs.CAFile, CertFile: other.ClientCert, KeyFile: other.ClientKey}, "tls: unknown certificate authority"},
		{"trusting another CA", EtcdCredentials{CAFile: other.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}, "unknown authority"},
		{"the system's roots", EtcdCredentials{CertFile: certs.ClientCert, KeyFile: certs.ClientKey}, "unknown authority"},
	} {
		start := time.Now()
		err := etcdPut(t, eps, c.cred, dial)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
		if took > 3*dial {
			t.Errorf("%s: refused after %v, want within the dial timeout", c.name, took)
		}
	}
}

// etcdPut checks etcd at eps with EtcdConfig's client of cred (as
// the cluster commands do), then writes a key with the client, bounded
// by the dial timeout.
func etcdPut(t *testing.T, eps []string, cred EtcdCredentials, dial time.Duration) error {
	t.Helper()
	cfg, err := EtcdConfig(eps, cred, dial)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEtcd(context.Background(), cfg); err != nil {
		return err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dial)
	defer cancel()
	_, err = cli.Put(ctx, "k", "v")
	return err
}

// TestClusterMemberTLS: a member whose credentials etcd admits joins the
// cluster; one without its client certificate is refused at once,
// saying why, rather than waiting out its joining.
func TestClusterMemberTLS(t *testing.T) {
	certs := etcdtest.NewCerts(t)
	etcd := etcdtest.Start(t, 1, etcdtest.ClientTLS(certs))
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()

	cfg := clusterConfig(t, dc, ps, etcd.SecureEndpoints(), "m1")
	cfg.Cluster.Credentials = EtcdCredentials{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}
	a, err := Build(cfg)
	if err != nil {
		t.Fatalf("a member with the right CA and client certificate: %v", err)
	}
	defer a.Close(context.Background())

	cfg = clusterConfig(t, dc, ps, etcd.SecureEndpoints(), "m2")
	cfg.Cluster.Credentials = EtcdCredentials{CAFile: certs.CAFile}
	cfg.Cluster.DialTimeout = 2 * time.Second
	start := time.Now()
	_, err = Build(cfg)
	if err == nil || !strings.Contains(err.Error(), "tls: certificate required") {
		t.Fatalf("a member without a client certificate: %v, want a refusal about the certificate", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a member without a client certificate was refused after %v, want within its dial timeout", took)
	}
}
