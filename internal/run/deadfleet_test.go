package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestDeadFleetAmplification: a fully dead fleet of 1,000 instances (connections refused),
// default retries (3) and retry budget (20% + 10), costs at most 1.1 connection attempts per
// instance: retries are earned by answers, and a dead fleet gives none. The run still exits 3
// with every instance named unreachable.
func TestDeadFleetAmplification(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 loopback addresses")
	}
	specs := make([]testkit.Spec, 1000)
	for i := range specs {
		specs[i].Dead = true
	}
	w := startWorld(t, specs, worldOpts{timeout: "2s"})
	w.cfg.CDN.BaseURLs = nil
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The default backoff (full jitter from 100ms): the retries are what is measured.
	rep, err := run.Verify(ctx, w.cfg, run.Options{Probe: []probe.Option{probe.WithDialer(w.dials.dial)}, Registry: loopbackRegistry})
	if rep == nil {
		t.Fatal(err)
	}
	dials := 0
	for _, in := range w.fleet.Instances {
		dials += w.dials.count(in.Address)
	}
	t.Logf("1,000 dead instances: %d connection attempts", dials)
	if dials < 1000 || dials > 1100 {
		t.Errorf("%d connection attempts, want 1,000..1,100", dials)
	}
	if rep.Verdict != model.VerdictError || rep.Summary.Unreachable != 1000 || !strings.Contains(rep.Error, "not a single instance answered") {
		t.Errorf("verdict %s, error %q, summary %+v", rep.Verdict, rep.Error, rep.Summary)
	}
}
