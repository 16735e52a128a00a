package httpserve

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyIsCut: a client that sends its headers and then trickles
// nothing of its body has its connection closed once ReadTimeout runs out,
// instead of holding it (and whatever the handler holds) for ever.
func TestSlowBodyIsCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body cut", http.StatusRequestTimeout)
			return
		}
		_, _ = io.WriteString(w, "read")
	})
	go func() { done <- Serve(ctx, ln, h, Config{Limits: Limits{ReadTimeout: 200 * time.Millisecond}}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a guard against a hang, not a timing claim
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("a body 97 bytes short was read whole")
		}
	}
	// Either way the server must close the connection.
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open after the read timeout")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server held the connection for 20 s")
	}
}

// TestHeaderLimit: headers over MaxHeaderBytes are refused with 431.
func TestHeaderLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.NotFoundHandler(), Config{Limits: Limits{MaxHeaderBytes: 1 << 10}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

// TestCertReload: a reload from a broken pair keeps the certificate in
// force; a reload from a good pair replaces it.
func TestCertReload(t *testing.T) {
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, cf, kf, "one")
	c, err := LoadCert(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string {
		cert, _ := c.TLSConfig().GetCertificate(nil)
		x, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	if err := os.WriteFile(cf, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err == nil {
		t.Fatal("a broken certificate file reloaded")
	}
	if got := cn(); got != "one" {
		t.Fatalf("after a failed reload the certificate is %q, want one", got)
	}
	writePair(t, cf, kf, "two")
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := cn(); got != "two" {
		t.Fatalf("after a reload the certificate is %q, want two", got)
	}
}

func writePair(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
