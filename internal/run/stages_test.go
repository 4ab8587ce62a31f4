package run

import (
	"context"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// TestStagesAlone calls every stage on its own, in the order Run calls them, on the incident
// world: what each returns is what the next one needs.
func TestStagesAlone(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := loadWorld(t, w, w.Record, nil)
	ctx := context.Background()
	o := fast()

	rel, extra, err := ResolveRelease(ctx, cfg, o.Logger, "test", o.Registry...)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Source != model.SourceRecord || len(extra) != 1 || extra[0].Kind != model.KindTagMoved {
		t.Fatalf("ResolveRelease: source %q, extra %+v; want the record and tag-moved", rel.Source, extra)
	}
	targets, err := Discover(ctx, cfg)
	if err != nil || len(targets) != 6 {
		t.Fatalf("Discover: %d targets, %v; want 6", len(targets), err)
	}
	obs, err := Probe(ctx, cfg, targets, o)
	if err != nil || len(obs) != 6 {
		t.Fatalf("Probe: %d observations, %v", len(obs), err)
	}
	for _, ob := range obs {
		if !ob.Reached || ob.AssetsSHA256 == "" {
			t.Fatalf("Probe: %s not read: %+v", ob.Target.ID, ob)
		}
	}
	runningDigests, err := RunningDigests(ctx, cfg, targets, o)
	if err != nil || runningDigests != nil {
		t.Fatalf("RunningDigests without a source: %v, %v; want nothing", runningDigests, err)
	}
	cdn, err := CheckCDN(ctx, cfg, obs, o)
	if err != nil {
		t.Fatal(err)
	}
	if cdn.Checked != len(w.Good.Assets)+len(w.Bad.Assets) {
		t.Errorf("CheckCDN checked %d assets, want %d (the union of both builds)", cdn.Checked, len(w.Good.Assets)+len(w.Bad.Assets))
	}
}

// TestRunInjectedTarget verifies one handed-in instance (as the lifecycle hook does), ignoring
// the fleet the config lists, with a trusted runtime source that catches its image.
func TestRunInjectedTarget(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := loadWorld(t, w, w.Record, nil)
	bad := w.Fleet.Instance("web-6")
	o := fast()
	o.Targets = []model.Target{{ID: "i-launching", Address: bad.Address}}
	o.Runtime = fixedRuntime{"i-launching": {ImageID: w.Repushed.Digest}}
	res, err := Run(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Summary.Instances != 1 || r.Instances[0].ID != "i-launching" {
		t.Fatalf("verified %+v, want only the injected target", r.Instances)
	}
	if got := kinds(r); len(got[model.KindContentMismatch]) != 1 {
		t.Errorf("content-mismatch: %v, want the injected target", got[model.KindContentMismatch])
	}
	fromRuntime := false
	for _, f := range r.Findings {
		fromRuntime = fromRuntime || (f.Kind == model.KindDigestMismatch && f.Instance == "i-launching" && f.Evidence["digest"] == "running")
	}
	if !fromRuntime {
		t.Errorf("no digest-mismatch from the runtime source in %+v", r.Findings)
	}
	if r.Instances[0].RunningDigest != w.Repushed.Digest {
		t.Errorf("running_digest = %q, want %q", r.Instances[0].RunningDigest, w.Repushed.Digest)
	}
	if len(res.Observations) != 1 || res.CDN == nil || res.Release == nil {
		t.Errorf("the result keeps every stage's output: %d observations, cdn %v, release %v", len(res.Observations), res.CDN != nil, res.Release != nil)
	}
}

type fixedRuntime map[string]model.RunningDigest

func (fixedRuntime) Name() string { return "fixed" }

func (f fixedRuntime) RunningDigests(_ context.Context, targets []model.Target) ([]model.RunningDigest, error) {
	out := make([]model.RunningDigest, len(targets))
	for i, t := range targets {
		r, ok := f[t.ID]
		if !ok {
			r.Unknown = "not in the fixture"
		}
		r.TargetID, r.Source = t.ID, "fixed"
		out[i] = r
	}
	return out, nil
}

// TestIncidentRuntimeDigests asks every instance's Docker Engine API (the test kit serves it on
// the instance's own address) which image it runs: the two instances on the re-pushed image
// are caught by the runtime's evidence, whatever they claim, and the honest four are not.
func TestIncidentRuntimeDigests(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Runtime = true
	cfg := loadWorld(t, w, w.Record, nil)
	res, err := Run(context.Background(), cfg, fast())
	if err != nil {
		t.Fatal(err)
	}
	var caught []string
	for _, f := range res.Report.Findings {
		if f.Kind == model.KindDigestUnchecked {
			t.Errorf("unexpected %s: %s", f.Kind, f.Message)
		}
		if f.Kind == model.KindDigestMismatch && f.Evidence["digest"] == "running" {
			caught = append(caught, f.Instance)
		}
	}
	if strings.Join(caught, ",") != "web-5,web-6" {
		t.Errorf("digest-mismatch from the runtime for %v, want web-5 and web-6", caught)
	}
	for _, in := range res.Report.Instances {
		want := w.Released.Digest
		if in.ID == "web-5" || in.ID == "web-6" {
			want = w.Repushed.Digest
		}
		if in.RunningDigest != want {
			t.Errorf("%s: running_digest %q, want %q (the repo digest of the release repository)", in.ID, in.RunningDigest, want)
		}
	}
}
