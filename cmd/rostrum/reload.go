package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/httpserve"
)

// The credential files of the HTTP surfaces: the token files (read,
// control, board administration, gateway), the gateway's HMAC secrets and
// the listeners' certificate pairs. Every one is read at start, where a
// token or secret shorter than auth.MinLength stops start-up with a
// message naming the flag and the file, and again on every SIGHUP by the
// long-running commands (run, demo, gateway). A file that fails to load
// then (unreadable, empty, a token too short, a broken pair) leaves what
// is in force in force, with a warning; SIGHUP never stops a process.
// Logs give counts, never a value (docs/DESIGN.md §15).

// loadTokens reads the token file of flag (auth.LoadTokens with the
// minimum length); errors name the flag.
func loadTokens(flag, path string) (*auth.Tokens, error) {
	t, err := auth.LoadTokens(path, auth.MinBytes(auth.MinLength))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return t, nil
}

// loadSecrets reads the HMAC secret file of flag, as loadTokens.
func loadSecrets(flag, path string) (*auth.Secrets, error) {
	s, err := auth.LoadSecrets(path, auth.MinBytes(auth.MinLength))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return s, nil
}

// listenTLSFlags are a listener's certificate and key:
// --{prefix}-tls-cert and --{prefix}-tls-key.
type listenTLSFlags struct {
	prefix    string
	cert, key string
}

func (t *listenTLSFlags) register(fs *cli.FlagSet, prefix, what string) {
	t.prefix = prefix
	fs.Group("http").StringVar(&t.cert, prefix+"-tls-cert", "", "PEM certificate (chain) of "+what+" (with --"+prefix+"-tls-key): serve HTTPS; re-read on SIGHUP")
	fs.Group("http").StringVar(&t.key, prefix+"-tls-key", "", "PEM private key of --"+prefix+"-tls-cert")
}

// load reads the pair; nil when neither flag is given. Errors name the
// flags.
func (t *listenTLSFlags) load() (*httpserve.Cert, error) {
	p := "--" + t.prefix + "-tls"
	switch {
	case t.cert == "" && t.key == "":
		return nil, nil
	case t.cert == "" || t.key == "":
		return nil, fmt.Errorf("%s-cert and %s-key go together: give both or neither", p, p)
	}
	c, err := httpserve.LoadCert(t.cert, t.key)
	if err != nil {
		return nil, fmt.Errorf("%s-cert / %s-key: %w", p, p, err)
	}
	return c, nil
}

// credentialFile is one file re-read on SIGHUP.
type credentialFile struct {
	flag   string                      // the flag that names it, for the log
	reload func() (auth.Change, error) // a token or secret file
	cert   *httpserve.Cert             // or a certificate pair
}

// credentials are the files a command re-reads on SIGHUP. Add them while
// the command starts, then watch.
type credentials struct {
	files []credentialFile
}

// tokens adds a token file; a nil t (the flag not given) adds nothing.
func (c *credentials) tokens(flag string, t *auth.Tokens) {
	if t != nil {
		c.files = append(c.files, credentialFile{flag: flag, reload: t.Reload})
	}
}

// secrets adds an HMAC secret file; a nil s adds nothing.
func (c *credentials) secrets(flag string, s *auth.Secrets) {
	if s != nil {
		c.files = append(c.files, credentialFile{flag: flag, reload: s.Reload})
	}
}

// cert adds a certificate pair; a nil x adds nothing.
func (c *credentials) cert(flag string, x *httpserve.Cert) {
	if x != nil {
		c.files = append(c.files, credentialFile{flag: flag, cert: x})
	}
}

// reload re-reads every file once and logs each outcome: the counts of a
// token or secret file (in force before and after, added, removed), or a
// warning naming the flag when the file failed to load and the previous
// set stays in force.
func (c *credentials) reload(lg *zap.Logger) {
	for _, f := range c.files {
		if f.cert != nil {
			if err := f.cert.Reload(); err != nil {
				lg.Warn("SIGHUP: certificate not reloaded; the previous one stays in force", zap.String("flag", f.flag), zap.Error(err))
				continue
			}
			lg.Info("SIGHUP: certificate reloaded", zap.String("flag", f.flag))
			continue
		}
		ch, err := f.reload()
		if err != nil {
			lg.Warn("SIGHUP: credentials not reloaded; the previous set stays in force", zap.String("flag", f.flag), zap.Error(err))
			continue
		}
		lg.Info("SIGHUP: credentials reloaded", zap.String("flag", f.flag),
			zap.Int("before", ch.Before), zap.Int("after", ch.After), zap.Int("added", ch.Added), zap.Int("removed", ch.Removed))
	}
}

// watch re-reads the files on every SIGHUP until ctx ends or the returned
// stop is called (stop waits for a reload under way). With no file it
// watches nothing: Main already keeps SIGHUP from stopping the process.
func (c *credentials) watch(ctx context.Context, lg *zap.Logger) (stop func()) {
	if len(c.files) == 0 {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				c.reload(lg)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(hup)
			cancel()
			wg.Wait()
		})
	}
}

// catchHangups keeps SIGHUP from stopping the process for as long as the
// returned stop is not called: every command ignores it, and the
// long-running ones re-read their credentials on it (credentials.watch).
// A signal the buffer cannot take is dropped, which is what ignoring
// means.
func catchHangups() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return func() { signal.Stop(hup) }
}
