package httpserve

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// Cert is a server certificate read from a PEM pair of files, replaced by
// Reload while connections are being accepted. It is safe for concurrent
// use.
type Cert struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCert reads the pair. Errors name both files.
func LoadCert(certFile, keyFile string) (*Cert, error) {
	c := &Cert{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the pair again; on an error the certificate in force stays
// in force.
func (c *Cert) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("certificate %s / key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

// TLSConfig returns a server configuration (TLS 1.2 and later) that
// presents the certificate in force at each handshake.
func (c *Cert) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil },
	}
}
