package probe

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// CertError is the error of a TLS handshake polygraph aborted because the instance's
// certificate failed verification. The certificate is still recorded as evidence.
type CertError struct {
	Addr string
	Err  error
}

func (e *CertError) Error() string {
	return fmt.Sprintf("certificate of %s fails verification: %s", e.Addr, e.Err)
}

func (e *CertError) Unwrap() error { return e.Err }

// tlsConfig verifies the certificate itself (the documented VerifyConnection pattern), so
// that a certificate failing verification is still recorded as evidence before the handshake
// is aborted: no request is sent over an unverified connection, so its content is never
// trusted. With insecure_skip_verify the handshake goes on and no verification error is
// recorded.
func (in *instance) tlsConfig() *tls.Config {
	o := &in.p.o
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tls != nil {
		tc = o.tls.Clone()
	}
	insecure := tc.InsecureSkipVerify
	name := hostOnly(o.host)
	if name == "" {
		name = hostOnly(in.t.Address)
	}
	tc.ServerName = name
	tc.InsecureSkipVerify = true //nolint:gosec // verified in VerifyConnection below
	roots := tc.RootCAs
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &CertError{Addr: in.t.Address, Err: errors.New("no certificate presented")}
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		vo := x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: inter}
		if tc.Time != nil {
			vo.CurrentTime = tc.Time()
		}
		_, err := leaf.Verify(vo)
		if insecure {
			err = nil
		}
		in.mu.Lock()
		if in.cert == nil {
			in.cert, in.certErr = leaf, err
		}
		in.mu.Unlock()
		if err != nil {
			return &CertError{Addr: in.t.Address, Err: err}
		}
		return nil
	}
	return tc
}

// sameTLS returns the one record of a certificate's evidence that every instance presenting
// it (and verified alike) shares. A fleet serves one certificate from every instance, and a
// record per instance would also cost each https instance its own observation tail where
// instances that answered alike share one (compact.go): about 550 bytes per instance.
func (p *Prober) sameTLS(info *model.TLSInfo) *model.TLSInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	if same, ok := p.certs[*info]; ok {
		return same
	}
	p.certs[*info] = info
	return info
}

// certInfo describes a leaf certificate.
func certInfo(cert *x509.Certificate, host string) *model.TLSInfo {
	sum := sha256.Sum256(cert.Raw)
	return &model.TLSInfo{
		NotAfter:    cert.NotAfter.UTC().Truncate(time.Second),
		SHA256:      hex.EncodeToString(sum[:]),
		Subject:     cert.Subject.CommonName,
		MatchesHost: host == "" || cert.VerifyHostname(host) == nil,
	}
}
