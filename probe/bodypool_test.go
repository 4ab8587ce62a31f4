package probe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestReusedBodiesLeaveObservationsIntact: instances take turns serving two builds of the
// same size, so each body is read into a buffer another instance's body used before. Every
// observation must still hold its own build's assets: nothing it keeps may point into a body.
func TestReusedBodiesLeaveObservationsIntact(t *testing.T) {
	builds := []*testkit.Build{testkit.CRABuild("a", 40, 8), testkit.CRABuild("b", 40, 8)}
	if len(builds[0].Manifest) != len(builds[1].Manifest) {
		t.Fatalf("the builds differ in size (%d, %d): the test needs them alike", len(builds[0].Manifest), len(builds[1].Manifest))
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := builds[n.Add(1)%2]
		w.Header().Set("Content-Type", b.ContentType)
		w.Header().Set("X-Build", b.Name)
		w.Write(b.Manifest)
	}))
	defer srv.Close()
	targets := make([]model.Target, 200)
	for i := range targets {
		targets[i] = model.Target{ID: fmt.Sprint("i", i), Address: strings.TrimPrefix(srv.URL, "http://")}
	}
	p := probe.New(probe.WithConcurrency(4), probe.WithVersionClaim(probe.Claim{Header: "X-Build"}))
	seen := map[string]int{}
	for _, o := range p.Probe(context.Background(), targets) {
		var b *testkit.Build
		for _, x := range builds {
			if x.Name == o.ReportedVersion {
				b = x
			}
		}
		if b == nil || !o.Reached {
			t.Fatalf("%s: %+v", o.Target.ID, o)
		}
		seen[b.Name]++
		var refs []string
		for _, a := range o.Assets {
			refs = append(refs, a.Ref)
		}
		want := slices.Clone(b.Assets)
		slices.Sort(refs)
		slices.Sort(want)
		if !slices.Equal(refs, want) {
			t.Fatalf("%s serves build %s but its observation holds the assets %v, want %v", o.Target.ID, b.Name, refs, want)
		}
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("builds seen: %v", seen)
	}
}
