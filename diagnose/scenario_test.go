package diagnose

import (
	"context"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
)

// scenario is the April 2021 incident (release v2.31.0 recorded, the tag re-pushed with a
// rebuild whose assets were never uploaded, two instances autoscaled after the re-push) plus
// an instance still on the older release v2.30.0, one serving a hotfix build that no tag
// holds, and one that refuses connections.
type scenario struct {
	w      *testkit.World
	cfg    *config.Config
	res    *run.Result
	old    *testkit.Build
	hotfix *testkit.Build
}

var base = time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)

func startScenario(t *testing.T, targets func(w *testkit.World, extra *testkit.Fleet) []model.Target) *scenario {
	t.Helper()
	ctx := context.Background()
	w, err := testkit.StartIncident(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	s := &scenario{w: w, old: testkit.CRABuild("store-web v2.30.0", 24, 8), hotfix: testkit.CRABuild("store-web hotfix", 24, 8)}
	// Tags pushed over time: an older release and some unrelated ones the search must skip.
	for i, tag := range []string{"v2.29.0", "v2.29.1"} {
		if _, _, err := testkit.PublishAt(ctx, w.Registry.Ref("store-web:"+tag), testkit.CRABuild("store-web "+tag, 24, 8), base.Add(-time.Duration(20-i)*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	oldPushed, _, err := testkit.PublishAt(ctx, w.Registry.Ref("store-web:v2.30.0"), s.old, base.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	w.CDN.Add(s.old.Assets...)
	extra, err := testkit.StartFleet([]testkit.Spec{
		{ID: "web-7", Build: s.old, Version: "v2.30.0", Digest: oldPushed.Digest, LaunchedAt: base.Add(-7*24*time.Hour + time.Hour), Labels: map[string]string{"az": "us-east-1a"}},
		{ID: "web-8", Build: s.hotfix, Version: "v2.31.0", LaunchedAt: base.Add(2 * time.Hour), Labels: map[string]string{"az": "us-east-1b"}},
		{ID: "web-9", Build: w.Good, Dead: true, LaunchedAt: base.Add(3 * time.Minute), Labels: map[string]string{"az": "us-east-1c"}},
	}, "/asset-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(extra.Close)
	path, err := w.WriteConfig(t.TempDir(), w.Record)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg, err = config.Load(path); err != nil {
		t.Fatal(err)
	}
	tg := append(w.Fleet.Targets(), extra.Targets()...)
	if targets != nil {
		tg = targets(w, extra)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.res, err = run.Run(ctx, s.cfg, run.Options{Targets: tg, Registry: []registry.Option{registry.WithCacheDir("")}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *scenario) diagnose(t *testing.T) *model.Diagnosis {
	t.Helper()
	d, err := Diagnose(context.Background(), s.cfg, Input{Release: s.res.Release, Report: s.res.Report}, Options{Registry: []registry.Option{registry.WithCacheDir("")}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
