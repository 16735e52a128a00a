package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs is a throwaway certificate authority with one server and one client
// certificate, written as PEM files into a temporary directory of the test.
// The server certificate is valid for localhost, 127.0.0.1 and ::1, so both
// redis-server and kfake can present it on loopback.
type Certs struct {
	Dir            string // directory holding the files below
	CAFile         string // the CA certificate, to trust
	ServerCertFile string // server certificate, signed by the CA
	ServerKeyFile  string // its private key (PKCS #8)
	ClientCertFile string // client certificate, signed by the CA
	ClientKeyFile  string // its private key (PKCS #8)

	pool           *x509.CertPool
	server, client tls.Certificate
	ca             *x509.Certificate // kept, with caKey, to issue more server certificates
	caKey          *ecdsa.PrivateKey
	notBefore      time.Time
	serial         int64 // last serial number issued
}

// NewCerts generates a CA and its server and client certificates (ECDSA
// P-256, valid from an hour ago for a day) in a fresh t.TempDir().
func NewCerts(tb testing.TB) *Certs {
	tb.Helper()
	dir := tb.TempDir()
	c := &Certs{
		Dir:            dir,
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
		pool:           x509.NewCertPool(),
	}
	now := time.Now()
	caKey := newKey(tb)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rostrum test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatalf("testenv: create CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatalf("testenv: parse CA certificate: %v", err)
	}
	c.pool.AddCert(ca)
	writePEM(tb, c.CAFile, "CERTIFICATE", caDER)
	c.ca, c.caKey, c.notBefore, c.serial = ca, caKey, now.Add(-time.Hour), 1

	c.server = c.issue(tb, "localhost", x509.ExtKeyUsageServerAuth, []string{"localhost"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, c.ServerCertFile, c.ServerKeyFile)
	c.client = c.issue(tb, "rostrum test client", x509.ExtKeyUsageClientAuth, nil, nil, c.ClientCertFile, c.ClientKeyFile)
	return c
}

// ServerCertFor issues a server certificate from the same CA that is valid
// for the given IP addresses only (no DNS name), so that a client checking
// any other host rejects it. It returns the PEM files of the certificate
// and its key, in Dir.
func (c *Certs) ServerCertFor(tb testing.TB, ips ...net.IP) (certFile, keyFile string) {
	tb.Helper()
	if len(ips) == 0 {
		tb.Fatal("testenv: ServerCertFor needs at least one IP address")
	}
	name := fmt.Sprintf("server-%d", c.serial+1)
	certFile = filepath.Join(c.Dir, name+".pem")
	keyFile = filepath.Join(c.Dir, name+"-key.pem")
	c.issue(tb, ips[0].String(), x509.ExtKeyUsageServerAuth, nil, ips, certFile, keyFile)
	return certFile, keyFile
}

// issue creates a leaf certificate signed by the CA for the given names,
// writes it and its key to certFile and keyFile, and returns the pair.
func (c *Certs) issue(tb testing.TB, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP, certFile, keyFile string) tls.Certificate {
	tb.Helper()
	c.serial++
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(c.serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    c.notBefore,
		NotAfter:     c.ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		tb.Fatalf("testenv: create %s certificate: %v", cn, err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("testenv: marshal %s key: %v", cn, err)
	}
	writePEM(tb, certFile, "CERTIFICATE", der)
	writePEM(tb, keyFile, "PRIVATE KEY", pk)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatalf("testenv: load %s key pair: %v", cn, err)
	}
	return cert
}

// ServerConfig returns a TLS configuration presenting the server
// certificate. With mutual, clients must present a certificate signed by
// the CA.
func (c *Certs) ServerConfig(mutual bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{c.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = c.pool
	}
	return cfg
}

// ClientConfig returns a TLS configuration that trusts the CA, presents the
// client certificate, and expects the server to be 127.0.0.1.
func (c *Certs) ClientConfig() *tls.Config {
	return &tls.Config{
		RootCAs:      c.pool,
		Certificates: []tls.Certificate{c.client},
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS12,
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testenv: generate key: %v", err)
	}
	return k
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	tb.Helper()
	// 0600, as a private key must be: redis-server runs as the same user.
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("testenv: write %s: %v", path, err)
	}
}
