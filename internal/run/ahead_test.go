package run_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestCDNCheckedWhileTheFleetIsProbed: Verify asks the CDN about each build's assets while the
// rest of the fleet is still probed, including a build first served late, asks each asset
// once, and reports exactly what Run, which checks the CDN only after probing, reports.
func TestCDNCheckedWhileTheFleetIsProbed(t *testing.T) {
	specs := make([]testkit.Spec, 24)
	late := testkit.CRABuild("store-web v2", 12, 4)
	for i := range specs {
		specs[i].Latency = 30 * time.Millisecond
		if i == 21 {
			specs[i].Build = late
		}
	}
	// Two instances at a time: probing takes twelve rounds of 30 ms.
	w := startWorld(t, specs, worldOpts{extra: "  concurrency: 2\n"})
	w.cdn.Add(late.Assets[:6]...) // the other half is missing
	opts := func(probed *int64) run.Options {
		return run.Options{
			Probe: []probe.Option{probe.WithBackoff(probe.NoWait, 0, 0), probe.WithDialer(w.dials.dial)}, Registry: loopbackRegistry,
			Probed: func() { *probed = w.cdn.Requests.Load() },
		}
	}
	unique := len(w.build.Assets)
	for _, a := range late.Assets {
		if !slices.Contains(w.build.Assets, a) {
			unique++
		}
	}

	var aheadAtProbed, afterAtProbed int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := run.Verify(ctx, w.cfg, opts(&aheadAtProbed))
	if err != nil && got == nil {
		t.Fatal(err)
	}
	if aheadAtProbed == 0 {
		t.Error("no CDN request before the fleet was probed: nothing was checked ahead")
	}
	if n := w.cdn.Requests.Load(); n != int64(unique) || got.CDN.Requests != unique {
		t.Errorf("Verify: the CDN answered %d requests (%d counted) for %d unique assets: each is asked once", n, got.CDN.Requests, unique)
	}

	w.cdn.Requests.Store(0)
	res, err := run.Run(ctx, w.cfg, opts(&afterAtProbed))
	if err != nil && res == nil {
		t.Fatal(err)
	}
	want := res.Report
	if afterAtProbed != 0 {
		t.Errorf("Run asked the CDN %d times while probing: its stages run one after another", afterAtProbed)
	}
	if !reflect.DeepEqual(got.CDN, want.CDN) {
		t.Errorf("CDN summary: Verify %+v, Run %+v", got.CDN, want.CDN)
	}
	if !reflect.DeepEqual(findings(got), findings(want)) {
		t.Errorf("findings differ:\nVerify %v\nRun    %v", findings(got), findings(want))
	}
	if len(findings(got)) == 0 || got.CDN.Checked != unique {
		t.Errorf("the test checked little: %d findings, %d assets checked of %d", len(findings(got)), got.CDN.Checked, unique)
	}
}

// findings lists a report's findings as kind, severity, instances and URL, in order.
func findings(r *model.Report) []string {
	var out []string
	for _, f := range r.Findings {
		ids := slices.Clone(f.Instances)
		if f.Instance != "" {
			ids = append(ids, f.Instance)
		}
		slices.Sort(ids)
		out = append(out, string(f.Kind)+" "+string(f.Severity)+" "+f.URL+" "+fmtIDs(ids))
	}
	slices.Sort(out)
	return out
}

func fmtIDs(ids []string) string {
	s := ""
	for _, id := range ids {
		s += id + ","
	}
	return s
}
