package probe

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
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
		var err error
		if !insecure {
			now := time.Now()
			if tc.Time != nil {
				now = tc.Time()
			}
			err = in.p.verifyChain(cs.PeerCertificates, name, now, func() ([][]*x509.Certificate, error) {
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				return leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: inter, CurrentTime: now})
			})
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

// maxChains bounds how many verdicts on presented certificate chains a prober remembers.
const maxChains = 256

// chainVerdict is what verifying one presented chain for one name gave, and while when it
// holds: the validity periods the verified chain (or, for a failure, the presented
// certificates) share.
type chainVerdict struct {
	from, until time.Time
	err         error
}

// verifyChain verifies the certificates an instance presented for name, once per prober for
// the same bytes: a fleet presents one chain from every instance, and verifying it is about
// a quarter of a TLS client handshake's CPU. A verdict is reused only for the same
// certificates, byte for byte, and name, while now lies within the validity of every
// certificate it rests on; the proof that the instance holds the key is the handshake's own,
// made on every connection.
func (p *Prober) verifyChain(certs []*x509.Certificate, name string, now time.Time, verify func() ([][]*x509.Certificate, error)) error {
	h := sha256.New()
	h.Write([]byte(name))
	for _, c := range certs {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(c.Raw))))
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	p.mu.Lock()
	v, ok := p.chains[key]
	p.mu.Unlock()
	if ok && !now.Before(v.from) && !now.After(v.until) {
		return v.err
	}
	chains, err := verify()
	rests := certs
	if err == nil && len(chains) > 0 {
		rests = chains[0] // the root, which was not presented, counts too
	}
	v = chainVerdict{err: err}
	for _, c := range rests {
		if c.NotBefore.After(v.from) {
			v.from = c.NotBefore
		}
		if v.until.IsZero() || c.NotAfter.Before(v.until) {
			v.until = c.NotAfter
		}
	}
	p.mu.Lock()
	if len(p.chains) < maxChains {
		p.chains[key] = v
	}
	p.mu.Unlock()
	return err
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
