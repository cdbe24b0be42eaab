package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// EtcdCredentials are what pinbot checks etcd with and proves itself
// with. The zero value is none: plain http:// endpoints, or https://
// ones whose server certificates the system's roots verify.
type EtcdCredentials struct {
	// CAFile is a PEM bundle of the authorities that sign etcd's server
	// certificates; "" trusts the system's roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its private
	// key, both or neither, for an etcd run with --client-cert-auth.
	CertFile, KeyFile string
	// Username and Password are an etcd user's, both or neither, for an
	// etcd with its authentication enabled.
	Username, Password string
}

// tls reports whether c names any TLS file.
func (c EtcdCredentials) tls() bool {
	return c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

// DefaultEtcdDialTimeout bounds the first connection to etcd when none
// is given.
const DefaultEtcdDialTimeout = 5 * time.Second

// EtcdField names what an *EtcdConfigError is about.
type EtcdField int

// The fields of an *EtcdConfigError: EtcdConfig's arguments.
const (
	EtcdEndpoints EtcdField = iota
	EtcdCAFile
	EtcdCertFile
	EtcdKeyFile
	EtcdUsername
	EtcdPassword
)

var etcdFieldNames = [...]string{"endpoints", "CA file", "certificate file", "key file", "username", "password"}

func (f EtcdField) String() string { return etcdFieldNames[f] }

// EtcdConfigError is a problem with one of EtcdConfig's arguments, so
// that a caller can name its own setting for it.
type EtcdConfigError struct {
	Field EtcdField
	Err   error
}

func (e *EtcdConfigError) Error() string {
	return "app: etcd " + e.Field.String() + ": " + e.Err.Error()
}

func (e *EtcdConfigError) Unwrap() error { return e.Err }

func fieldErr(f EtcdField, format string, args ...any) error {
	return &EtcdConfigError{Field: f, Err: fmt.Errorf(format, args...)}
}

// EtcdConfig returns the configuration of a client of the etcd cluster
// at endpoints, reached with cred; dialTimeout bounds the first
// connection (0: DefaultEtcdDialTimeout). Every client pinbot makes of a
// pinbot cluster's etcd is built here: a member's and the cluster
// commands'.
//
// The endpoints must be all http:// or all https:// (the client takes
// one scheme for all of them). Over https:// the client speaks TLS 1.2
// or later and verifies the server against cred.CAFile, else the
// system's roots; TLS files with http:// endpoints are refused, as is a
// client certificate without its key, a file holding no certificate, or
// a key that is not the certificate's. Each error is an
// *EtcdConfigError.
func EtcdConfig(endpoints []string, cred EtcdCredentials, dialTimeout time.Duration) (clientv3.Config, error) {
	if dialTimeout == 0 {
		dialTimeout = DefaultEtcdDialTimeout
	}
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	}
	secure, err := endpointsScheme(endpoints)
	if err != nil {
		return cfg, err
	}
	switch {
	case !secure && cred.tls():
		return cfg, fieldErr(EtcdEndpoints, "TLS files are given, so the endpoints must be https:// URLs, not http://")
	case (cred.Username == "") != (cred.Password == ""):
		if cred.Username == "" {
			return cfg, fieldErr(EtcdUsername, "a password is given without a username")
		}
		return cfg, fieldErr(EtcdPassword, "a username is given without a password")
	case secure:
		if cfg.TLS, err = etcdTLS(cred); err != nil {
			return cfg, err
		}
	}
	cfg.Username, cfg.Password = cred.Username, cred.Password
	return cfg, nil
}

// endpointsScheme checks that the endpoints are URLs of one scheme,
// http or https, and reports whether it is https.
func endpointsScheme(endpoints []string) (secure bool, err error) {
	if len(endpoints) == 0 {
		return false, fieldErr(EtcdEndpoints, "none given")
	}
	for i, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false, fieldErr(EtcdEndpoints, "%q is not an http:// or https:// URL", e)
		}
		if i > 0 && (u.Scheme == "https") != secure {
			return false, fieldErr(EtcdEndpoints, "they mix http:// and https:// URLs: want all of one")
		}
		secure = u.Scheme == "https"
	}
	return secure, nil
}

// etcdTLS returns the client's TLS configuration: cred's authorities
// (nil: the system's) and client certificate, TLS 1.2 at least.
func etcdTLS(cred EtcdCredentials) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cred.CAFile != "" {
		pem, err := readPEMCerts(EtcdCAFile, cred.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fieldErr(EtcdCAFile, "%s holds no valid certificate", cred.CAFile)
		}
	}
	switch {
	case cred.CertFile == "" && cred.KeyFile == "":
		return cfg, nil
	case cred.KeyFile == "":
		return nil, fieldErr(EtcdKeyFile, "a client certificate is given without its key")
	case cred.CertFile == "":
		return nil, fieldErr(EtcdCertFile, "a client key is given without its certificate")
	}
	certPEM, err := readPEMCerts(EtcdCertFile, cred.CertFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(cred.KeyFile)
	if err != nil {
		return nil, fieldErr(EtcdKeyFile, "%w", err)
	}
	if !hasPEMKey(keyPEM) {
		return nil, fieldErr(EtcdKeyFile, "%s holds no PEM private key", cred.KeyFile)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fieldErr(EtcdKeyFile, "%s is not the key of the certificate in %s: %s",
			cred.KeyFile, cred.CertFile, strings.TrimPrefix(err.Error(), "tls: "))
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// readPEMCerts reads path, which must hold a PEM certificate at least.
func readPEMCerts(f EtcdField, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fieldErr(f, "%w", err)
	}
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil, fieldErr(f, "%s holds no PEM certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			return b, nil
		}
	}
}

// hasPEMKey reports whether b holds a PEM private key.
func hasPEMKey(b []byte) bool {
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return false
		}
		if block.Type == "PRIVATE KEY" || strings.HasSuffix(block.Type, " PRIVATE KEY") {
			return true
		}
	}
}

// CheckEtcd asks each endpoint of cfg for its status, connecting as a
// client of cfg does, within cfg.DialTimeout. It returns nil once one
// answers, else why none did: a TLS refusal by either side, or no
// server. The client itself waits for a connection until its request's
// deadline and then says no more than that, so the programs probe first
// to report the cause.
func CheckEtcd(ctx context.Context, cfg clientv3.Config) error {
	if cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	errs := make([]error, len(cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range cfg.Endpoints {
		wg.Go(func() { errs[i] = probeEtcd(ctx, ep, cfg.TLS) })
	}
	wg.Wait()
	if slices.Contains(errs, nil) {
		return nil
	}
	return fmt.Errorf("app: etcd: no endpoint answers: %w", errors.Join(errs...))
}

// probeEtcd asks the member at endpoint ep for its status, failing as
// soon as the connection does. An answer, even an error of etcd's, is a
// member that accepted the connection.
func probeEtcd(ctx context.Context, ep string, tlsCfg *tls.Config) error {
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("%s: %w", ep, err)
	}
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg.Clone())
	}
	conn, err := grpc.NewClient("passthrough:///"+u.Host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("%s: %w", ep, err)
	}
	defer conn.Close()
	_, err = etcdserverpb.NewMaintenanceClient(conn).Status(ctx, &etcdserverpb.StatusRequest{})
	switch s, _ := status.FromError(err); {
	case err == nil, s.Code() != codes.Unavailable && s.Code() != codes.DeadlineExceeded && s.Code() != codes.Canceled:
		return nil
	case s.Code() == codes.Unavailable && tlsCfg != nil && !strings.Contains(s.Message(), "tls:"):
		// Over TLS 1.3 a server refuses the client's certificate after
		// the client's handshake is done: gRPC, writing at once, may
		// see the connection closed and not the alert that says why.
		if terr := tlsRefusal(ctx, u.Host, tlsCfg); terr != nil {
			return fmt.Errorf("%s: %w", ep, terr)
		}
		fallthrough
	case s.Code() == codes.Unavailable:
		msg := strings.TrimPrefix(s.Message(), "connection error: desc = ")
		if uq, err := strconv.Unquote(msg); err == nil {
			msg = uq
		}
		return fmt.Errorf("%s: %s", ep, msg)
	default:
		return fmt.Errorf("%s: no answer: %s", ep, s.Message())
	}
}

// tlsRefusal shakes hands with the server at addr as tlsCfg's client,
// sends nothing and reads: a server refusing the client's certificate
// says so in an alert. It returns that refusal, or nil when none came
// within ctx.
func tlsRefusal(ctx context.Context, addr string, tlsCfg *tls.Config) error {
	d := tls.Dialer{Config: tlsCfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), "tls:") {
			return err
		}
		return nil
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetReadDeadline(dl)
	}
	_, err = conn.Read(make([]byte, 1))
	if err != nil && strings.Contains(err.Error(), "tls:") {
		return err
	}
	return nil
}

// dialEtcd checks that etcd answers a client of cfg, then makes a
// member's client (cfg.DialOptions are the member's own). When cc.Join
// is nil a refusal is an error, else a warning, and joining tries
// again. The check comes first: with a user set, the client signs in
// as it is made, and a refusal then says no more than a timeout.
func dialEtcd(cc *ClusterConfig, cfg clientv3.Config, log zerolog.Logger) (*clientv3.Client, error) {
	parent := context.Background()
	if cc.Join != nil {
		parent = cc.Join
	}
	if err := CheckEtcd(parent, cfg); err != nil {
		if cc.Join == nil {
			return nil, err
		}
		log.Warn().Err(err).Msg("etcd does not answer yet; joining the cluster tries again")
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("app: cluster: etcd client: %w", err)
	}
	return cli, nil
}
