package main

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
)

// TestVerifyHandsOverItsConfig checks that verify keeps no reference to the config's static
// entries while the fleet is probed: they are targets by then, and at 10,000 instances the
// entries are half a megabyte of live heap (a megabyte of peak RSS) for the whole run.
func TestVerifyHandsOverItsConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`
fleet:
  static:
    - {id: web-1, address: "127.0.0.1:1"}
probe:
  scheme: http
  host: shop.example.test
  manifest: {path: /asset-manifest.json, format: webpack}
  timeout: 1s
cdn:
  base_urls: ["http://127.0.0.1:1/"]
`), "polygraph.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	entry := weak.Make(&cfg.Fleet.Static[0])
	probed := false
	f := &fleetRun{cfg: cfg, opts: run.Options{Probed: func() {
		probed = true
		runtime.GC()
		if entry.Value() != nil {
			t.Error("the config's static entries are still reachable while the fleet is probed")
		}
	}}}
	cfg = nil
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.verify(ctx); err != nil {
		t.Logf("verify: %v", err) // an unreachable fleet cannot be verified; the point is the heap
	}
	runtime.KeepAlive(f) // as verifyAction, which renders with f's settings afterwards
	if !probed {
		t.Fatal("the run never reached the end of probing: the test checked nothing")
	}
}
