package bench_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/bench"
	"github.com/polygraph-dev/polygraph/bench/fetch"
	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/model"
)

// small is the benchmark's workload shrunk to run in a test.
func small() bench.Workload {
	wl := bench.DefaultWorkload()
	wl.Instances, wl.Entries, wl.Builds, wl.Latency, wl.MissingEvery = 60, 20, 4, 0, 7
	return wl
}

// TestFetcherAndPolygraphAgree checks that the benchmark's two programs do the same work on
// its world: every manifest fetched, the same unique assets checked, the same ones missing.
func TestFetcherAndPolygraphAgree(t *testing.T) {
	w, err := bench.StartWorld(small(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := w.Ready
	if r.Builds != 4 || r.UniqueAssets != 4*20 || r.Missing != 4*20/7 {
		t.Fatalf("world: %+v, want 4 builds, 80 unique assets, 11 missing", r)
	}

	data, err := os.ReadFile(r.Targets)
	if err != nil {
		t.Fatal(err)
	}
	got := fetch.Run(context.Background(), fetch.Config{
		Targets: strings.Fields(string(data)), Host: r.Host, ManifestPath: r.ManifestPath, CDN: r.CDN,
		Concurrency: 8, CDNConcurrency: 4, Timeout: 5 * time.Second,
	})
	if got.Manifests != 60 || got.Failed != 0 || got.Digests != 4 || got.UniqueAssets != r.UniqueAssets || got.Missing != r.Missing || got.CDNErrors != 0 {
		t.Errorf("fetcher: %+v, want 60 manifests of 4 builds, %d unique assets, %d missing", got, r.UniqueAssets, r.Missing)
	}

	cfg, err := config.Load(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := run.Verify(context.Background(), cfg, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CDN.Checked != r.UniqueAssets || rep.CDN.Missing != r.Missing || rep.Summary.Instances != 60 || rep.Summary.Unreachable != 0 {
		t.Errorf("polygraph: cdn %+v, summary %+v; want %d checked, %d missing, 60 instances reached", rep.CDN, rep.Summary, r.UniqueAssets, r.Missing)
	}
	if !rep.Failed(model.SeverityError) {
		t.Errorf("polygraph passed a fleet on 4 builds with missing assets (verdict %s)", rep.Verdict)
	}
}
