package probe

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"testing"
	"time"
)

func selfSigned(t *testing.T, cn string, from, until time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: from, NotAfter: until, DNSNames: []string{cn}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChainVerifiedOncePerProber: a chain is verified once for the same certificates and
// name, and again for other bytes, another name, or a time outside the validity its verdict
// rests on; failures are remembered like successes.
func TestChainVerifiedOncePerProber(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a := selfSigned(t, "shop.example.test", now.Add(-time.Hour), now.Add(time.Hour))
	b := selfSigned(t, "shop.example.test", now.Add(-time.Hour), now.Add(48*time.Hour))
	p := New()
	calls := 0
	refuse := errors.New("x509: certificate signed by unknown authority")
	verify := func(err error) func() ([][]*x509.Certificate, error) {
		return func() ([][]*x509.Certificate, error) {
			calls++
			if err != nil {
				return nil, err
			}
			return [][]*x509.Certificate{{a}}, nil
		}
	}
	for _, step := range []struct {
		name  string
		certs []*x509.Certificate
		host  string
		at    time.Time
		err   error // what verifying would give
		calls int   // verifications so far
	}{
		{"first", []*x509.Certificate{a}, "shop.example.test", now, nil, 1},
		{"same chain", []*x509.Certificate{a}, "shop.example.test", now.Add(time.Minute), nil, 1},
		{"another name", []*x509.Certificate{a}, "other.example.test", now, nil, 2},
		{"after the chain expired", []*x509.Certificate{a}, "shop.example.test", now.Add(2 * time.Hour), nil, 3},
		{"other bytes", []*x509.Certificate{b}, "shop.example.test", now, refuse, 4},
		{"a failure remembered", []*x509.Certificate{b}, "shop.example.test", now.Add(time.Minute), nil, 4},
		{"an intermediate more", []*x509.Certificate{a, b}, "shop.example.test", now, nil, 5},
	} {
		err := p.verifyChain(step.certs, step.host, step.at, verify(step.err))
		if calls != step.calls {
			t.Errorf("%s: %d verifications, want %d", step.name, calls, step.calls)
		}
		if step.name == "a failure remembered" && !errors.Is(err, refuse) {
			t.Errorf("%s: err = %v, want the first verdict", step.name, err)
		}
	}
}
