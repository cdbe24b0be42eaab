// Package redislog is the usual exact sliding-window limiter built on
// Redis: each account's grants are the members of a sorted set scored by
// their time, and one Lua script per decision trims the set to the window,
// counts it, and adds the new grant if the count is under the limit. It
// also starts and stops the redis-server the comparison runs against.
//
// # Usage
//
//	srv, err := redislog.Start(ctx, redislog.ServerOptions{AppendFsync: "always"})
//	defer srv.Stop()
//	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
//	sha, err := redislog.Load(ctx, c)
//	l := redislog.NewLimiter(c, sha, 100, 12*time.Hour)
//	ok, err := l.AllowAt(ctx, "account", time.Now())
package redislog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/child"
	"github.com/rs/zerolog"
)

// ErrNotInstalled is returned when no redis-server binary can be found.
var ErrNotInstalled = errors.New("redislog: redis-server not found")

// DefaultBinary is the redis-server looked up on PATH.
const DefaultBinary = "redis-server"

// Find returns the path of binary (DefaultBinary if empty), looked up on
// PATH unless it contains a slash. The error wraps ErrNotInstalled.
func Find(binary string) (string, error) {
	if binary == "" {
		binary = DefaultBinary
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("%w (%s): %w", ErrNotInstalled, binary, err)
	}
	return path, nil
}

// ServerOptions configures Start.
type ServerOptions struct {
	// Binary is the redis-server to run (DefaultBinary if empty).
	Binary string
	// AppendFsync is Redis' appendfsync policy: "always" (fsync before
	// each reply) or "everysec" (fsync once a second). The append-only
	// file is always on and RDB snapshots are off.
	AppendFsync string
	// StartTimeout bounds the wait for the first PONG (10 s if zero).
	StartTimeout time.Duration
	// Log receives the server's start and stop, tagged component=redis.
	Log zerolog.Logger
}

// Server is a redis-server that Start launched on a loopback port, with
// its data in a fresh temporary directory.
type Server struct {
	// Addr is the server's host:port on the loopback interface.
	Addr string
	// Dir is the server's data directory, removed by Stop.
	Dir string

	cmd      *exec.Cmd
	output   *child.Tail
	exited   chan struct{} // closed once the process has been waited for
	waitErr  error
	stopOnce sync.Once
	stopErr  error
	log      zerolog.Logger
}

// Start launches redis-server on a free loopback port in a new temporary
// directory and returns once it answers PING. If it does not start, the
// process is stopped, the directory removed, and the error carries the
// server's last output. The process gets SIGKILL if pinbench dies, and
// Stop must be called in every other case.
func Start(ctx context.Context, opts ServerOptions) (*Server, error) {
	bin, err := Find(opts.Binary)
	if err != nil {
		return nil, err
	}
	switch opts.AppendFsync {
	case "always", "everysec":
	default:
		return nil, fmt.Errorf("redislog: appendfsync %q: want always or everysec", opts.AppendFsync)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	// The port is found free, closed, then given to Redis: another
	// process may take it in between, so a bind failure is retried.
	var lastErr error
	for range 3 {
		s, err := start(ctx, bin, opts)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil || !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, bin string, opts ServerOptions) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pinbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redislog: data directory: %w", err)
	}
	s := &Server{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:    dir,
		output: child.NewTail(4096),
		exited: make(chan struct{}),
		log:    opts.Log.With().Str("component", "redis").Str("appendfsync", opts.AppendFsync).Logger(),
	}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--appendonly", "yes",
		"--appendfsync", opts.AppendFsync,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
	)
	s.cmd.Stdout = s.output
	s.cmd.Stderr = s.output
	s.cmd.SysProcAttr = child.Attr()
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redislog: start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, opts.StartTimeout); err != nil {
		if stopErr := s.Stop(); stopErr != nil {
			s.log.Error().Err(stopErr).Msg("stopping a server that did not start")
		}
		return nil, err
	}
	s.log.Info().Str("addr", s.Addr).Str("dir", dir).Msg("redis-server ready")
	return s, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redislog: finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// waitReady sends PING until the server answers PONG, the process exits,
// ctx ends or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(s.Addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redislog: redis-server on %s did not answer PING within %v: %w; its output:\n%s",
				s.Addr, timeout, err, s.output.String())
		}
		retry := time.NewTimer(20 * time.Millisecond)
		select {
		case <-s.exited:
			retry.Stop()
			return fmt.Errorf("redislog: redis-server exited at start (%v); its output:\n%s", s.waitErr, s.output.String())
		case <-ctx.Done():
			retry.Stop()
			return ctx.Err()
		case <-retry.C:
		}
	}
}

// ping sends one PING in the Redis protocol and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s), waits for it
// and removes its directory. It may be called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			timer := time.NewTimer(10 * time.Second)
			select {
			case <-s.exited:
				timer.Stop()
			case <-timer.C:
				s.log.Warn().Msg("redis-server ignored SIGTERM for 10s; killing it")
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if err := os.RemoveAll(s.Dir); err != nil {
			s.stopErr = fmt.Errorf("redislog: removing %s: %w", s.Dir, err)
		}
		s.log.Info().Str("addr", s.Addr).Msg("redis-server stopped")
	})
	return s.stopErr
}

// Output returns the last lines the server printed.
func (s *Server) Output() string { return s.output.String() }
