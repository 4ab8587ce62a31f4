package testkit

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
	"time"
)

// CertKind chooses the certificate an instance of an https fleet presents.
type CertKind string

// Certificate kinds.
const (
	// CertShared is the fleet's certificate, issued by the fleet's CA for the probe host and
	// every instance address: what a healthy fleet presents (the default).
	CertShared CertKind = ""
	// CertOther is another valid certificate for the same names (a stale or rogue deploy).
	CertOther CertKind = "other"
	// CertExpired expired a day ago.
	CertExpired CertKind = "expired"
	// CertExpiring is valid but expires in two days.
	CertExpiring CertKind = "expiring"
	// CertWrongHost is issued by the CA for another host name only.
	CertWrongHost CertKind = "wrong-host"
	// CertUntrusted is self-signed: no CA the prober knows issued it.
	CertUntrusted CertKind = "untrusted"
)

// authority is an in-process certificate authority; keys never leave the process.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// leaf issues a serving certificate for names and IPs valid from notBefore to notAfter; a nil
// ca makes it self-signed.
func leaf(ca *authority, names []string, ips []net.IP, notBefore, notAfter time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	cn := "instance"
	if len(names) > 0 {
		cn = names[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: names, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("issuing a test certificate: %w", err)
	}
	c := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	c.Leaf, err = x509.ParseCertificate(der)
	return c, err
}

// fleetCerts issues the certificates of a fleet: one shared certificate, and one per kind
// asked for.
type fleetCerts struct {
	ca     *authority
	host   string
	ips    []net.IP
	shared tls.Certificate
	byKind map[CertKind]tls.Certificate
}

func newFleetCerts(host string, ips []net.IP) (*fleetCerts, error) {
	ca, err := newAuthority("polygraph testkit CA")
	if err != nil {
		return nil, err
	}
	fc := &fleetCerts{ca: ca, host: host, ips: ips, byKind: map[CertKind]tls.Certificate{}}
	fc.shared, err = fc.issue(CertShared)
	return fc, err
}

func (fc *fleetCerts) names() []string {
	if fc.host == "" {
		return nil
	}
	return []string{fc.host}
}

func (fc *fleetCerts) get(k CertKind) (tls.Certificate, error) {
	if k == CertShared {
		return fc.shared, nil
	}
	if c, ok := fc.byKind[k]; ok {
		return c, nil
	}
	c, err := fc.issue(k)
	if err == nil {
		fc.byKind[k] = c
	}
	return c, err
}

func (fc *fleetCerts) issue(k CertKind) (tls.Certificate, error) {
	now := time.Now()
	from, to := now.Add(-time.Hour), now.Add(90*24*time.Hour)
	switch k {
	case CertShared, CertOther:
		return leaf(fc.ca, fc.names(), fc.ips, from, to)
	case CertExpired:
		return leaf(fc.ca, fc.names(), fc.ips, now.Add(-60*24*time.Hour), now.Add(-24*time.Hour))
	case CertExpiring:
		return leaf(fc.ca, fc.names(), fc.ips, from, now.Add(48*time.Hour))
	case CertWrongHost:
		return leaf(fc.ca, []string{"wrong-host.example.net"}, nil, from, to)
	case CertUntrusted:
		return leaf(nil, fc.names(), fc.ips, from, to)
	}
	return tls.Certificate{}, fmt.Errorf("unknown certificate kind %q", k)
}
