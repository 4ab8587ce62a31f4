package probe_test

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestInstancesShareTheEvidenceOfOneCertificate: every instance presenting the fleet's
// certificate shares one record of its evidence, so https instances that answered alike stay
// one compact observation record each (a record per instance cost about 550 bytes more per
// instance); instances presenting other certificates, or one verified differently, keep
// their own.
func TestInstancesShareTheEvidenceOfOneCertificate(t *testing.T) {
	const host = "shop.example.test"
	b := testkit.CRABuild("tls", 6, 2)
	kinds := []testkit.CertKind{testkit.CertShared, testkit.CertShared, testkit.CertShared, testkit.CertOther, testkit.CertOther, testkit.CertWrongHost}
	specs := make([]testkit.Spec, len(kinds))
	for i, k := range kinds {
		specs[i] = testkit.Spec{Build: b, Cert: k}
	}
	f, err := testkit.StartFleetWith(specs, testkit.FleetOptions{TLS: true, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := probe.New(probe.WithScheme("https"), probe.WithHost(host), probe.WithTLS(&tls.Config{RootCAs: f.CAPool}))
	list := p.ProbeCompact(context.Background(), f.Targets())
	records := map[*model.TLSInfo][]int{}
	for i := range list.Len() {
		o := list.At(i)
		if o.TLS == nil {
			t.Fatalf("%s: no TLS evidence: %+v", o.Target.ID, o)
		}
		records[o.TLS] = append(records[o.TLS], i)
	}
	if len(records) != 3 {
		t.Fatalf("%d records of TLS evidence for three certificates: %v", len(records), records)
	}
	for rec, at := range records {
		switch kinds[at[0]] {
		case testkit.CertShared, testkit.CertOther:
			if len(at) != 2 && len(at) != 3 || !rec.MatchesHost || rec.VerifyError != "" {
				t.Errorf("instances %v: %+v", at, rec)
			}
		case testkit.CertWrongHost:
			if len(at) != 1 || rec.MatchesHost || rec.VerifyError == "" {
				t.Errorf("instance %v: %+v", at, rec)
			}
		}
		for _, i := range at {
			if kinds[i] != kinds[at[0]] {
				t.Errorf("instances %v present different certificates but share %+v", at, rec)
			}
		}
	}
}
