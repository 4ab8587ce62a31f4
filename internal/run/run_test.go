package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func fast() Options {
	return Options{
		Probe:    []probe.Option{probe.WithBackoff(probe.NoWait, 0, 0), probe.WithDialer(testkit.LoopbackDial)},
		Registry: []registry.Option{registry.WithTransport(testkit.LoopbackTransport()), registry.WithCacheDir("")},
	}
}

func kinds(r *model.Report) map[model.Kind][]string {
	out := map[model.Kind][]string{}
	for _, f := range r.Findings {
		who := f.Instance
		if who == "" {
			who = f.URL
		}
		out[f.Kind] = append(out[f.Kind], who)
	}
	return out
}

func loadWorld(t *testing.T, w *testkit.World, rec *model.ReleaseRecord, edit func(string) string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	path, err := w.WriteConfig(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		data, _ := os.ReadFile(path)
		if err := os.WriteFile(path, []byte(edit(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestIncidentEndToEnd(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cases := []struct {
		name   string
		rec    *model.ReleaseRecord
		image  string
		source string
		want   map[model.Kind][]string
		ok     int
	}{
		{"with a release record", w.Record, w.Image, model.SourceRecord, map[model.Kind][]string{
			model.KindTagMoved: {""}, model.KindVersionLie: {"web-5", "web-6"}, model.KindContentMismatch: {"web-5", "web-6"},
			model.KindDigestMismatch: {"web-5", "web-6"},
		}, 4},
		{"by consensus", nil, "", model.SourceConsensus, map[model.Kind][]string{
			model.KindContentDrift: {""},
		}, 4},
		{"from the registry: the re-pushed tag is the truth now", nil, w.Image, model.SourceRegistry, map[model.Kind][]string{
			// The tag now names the rebuild: the four good instances run the old digest and
			// serve the old content, while the two new ones match the registry but miss assets.
			model.KindContentMismatch: {"web-1", "web-2", "web-3", "web-4"},
			model.KindDigestMismatch:  {"web-1", "web-2", "web-3", "web-4"},
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			world := *w
			world.Image = tc.image
			cfg := loadWorld(t, &world, tc.rec, nil)
			r, err := Verify(context.Background(), cfg, fast())
			if err != nil {
				t.Fatal(err)
			}
			got := kinds(r)
			for k, ids := range tc.want {
				if k == model.KindContentDrift || k == model.KindTagMoved {
					if len(got[k]) != 1 {
						t.Errorf("%s: got %v", k, got[k])
					}
					continue
				}
				if !slices.Equal(got[k], ids) {
					t.Errorf("%s: got %v, want %v", k, got[k], ids)
				}
			}
			if n := len(got[model.KindAssetMissing]); n != len(w.Bad.Assets) {
				t.Errorf("asset-missing findings = %d, want %d (every asset of the rebuild)", n, len(w.Bad.Assets))
			}
			if r.Release.Source != tc.source || r.Summary.OK != tc.ok || r.Summary.Mismatch != 6-tc.ok {
				t.Errorf("source %s, summary %+v", r.Release.Source, r.Summary)
			}
			for _, a := range w.Good.Assets {
				if hits := w.CDN.Hits(a); hits != 1 {
					t.Fatalf("CDN asked %d times for %s, want once per run", hits, a)
				}
			}
			w.CDN.ResetHits()
		})
	}
}

func TestHealthyFleetPasses(t *testing.T) {
	b := testkit.CRABuild("healthy", 50, 4)
	cdn, err := testkit.StartCDN("/s/", b)
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	f, err := testkit.StartFleet([]testkit.Spec{{Build: b, Version: "v1"}, {Build: b, Version: "v1"}, {Build: b, Version: "v1"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := regtest.NewServer()
	defer reg.Close()
	_, rec, err := testkit.Publish(context.Background(), reg.Ref("web:v1"), b)
	if err != nil {
		t.Fatal(err)
	}
	w := &testkit.World{Fleet: f, CDN: cdn, Good: b, Version: "v1", Image: reg.Ref("web:v1")}
	r, err := Verify(context.Background(), loadWorld(t, w, rec, nil), fast())
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != model.VerdictPass || len(r.Findings) != 0 || r.CDN.Checked != 50 || r.Release.Source != model.SourceRecord {
		t.Fatalf("verdict %s, findings %v, cdn %+v", r.Verdict, r.Findings, r.CDN)
	}
}

func TestDeadHangingAndFallbackInstances(t *testing.T) {
	b := testkit.CRABuild("faults", 10, 0)
	spa := &testkit.Build{Name: "spa", ContentType: "text/html", Manifest: []byte("<!doctype html><html><body>app</body></html>")}
	cdn, err := testkit.StartCDN("/s/", b)
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	f, err := testkit.StartFleet([]testkit.Spec{
		{ID: "ok", Build: b}, {ID: "dead", Build: b, Dead: true}, {ID: "hang", Build: b, Hang: true},
		{ID: "spa", Build: spa}, {ID: "broken", Build: b, Status: 503},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &testkit.World{Fleet: f, CDN: cdn, Good: b, Version: "v1"}
	cfg := loadWorld(t, w, nil, func(s string) string { return s + "" })
	cfg.Probe.Timeout = config.Duration(300 * time.Millisecond)
	start := time.Now()
	r, err := Verify(context.Background(), cfg, fast())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %s", d)
	}
	got := kinds(r)
	if !slices.Equal(got[model.KindUnreachable], []string{"broken", "dead", "hang"}) {
		t.Errorf("unreachable = %v", got[model.KindUnreachable])
	}
	if !slices.Equal(got[model.KindManifestInvalid], []string{"spa"}) {
		t.Errorf("manifest-invalid = %v", got[model.KindManifestInvalid])
	}
	if r.Summary.OK != 1 || r.Summary.Unreachable != 3 || r.Summary.Error != 1 {
		t.Errorf("summary %+v", r.Summary)
	}
}

func TestNothingAnswersIsUnverifiable(t *testing.T) {
	b := testkit.CRABuild("x", 3, 0)
	cdn, _ := testkit.StartCDN("/s/", b)
	defer cdn.Close()
	f, err := testkit.StartFleet([]testkit.Spec{{Dead: true}, {Dead: true}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &testkit.World{Fleet: f, CDN: cdn, Good: b}
	r, err := Verify(context.Background(), loadWorld(t, w, nil, nil), fast())
	var ue *UnverifiableError
	if !errors.As(err, &ue) || r == nil {
		t.Fatalf("err = %v (report %v), want *UnverifiableError with a report", err, r != nil)
	}
}

func TestRecordErrorsAreConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "release.json")
	os.WriteFile(bad, []byte(`{"schema":"something/v9"}`), 0o644)
	for _, path := range []string{filepath.Join(dir, "nope.json"), bad} {
		cfg, err := config.Parse([]byte("release:\n  record: "+path+"\n"), "p.yaml", dir)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = ResolveRelease(context.Background(), cfg, nil, "test")
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
			t.Errorf("record %s: err = %v, want a *config.Error naming the file", path, err)
		}
	}
}

// The CLI sizes its memory limit from these callbacks: both must be called, in order.
func TestDiscoveredThenProbed(t *testing.T) {
	b := testkit.CRABuild("hooks", 2, 0)
	f, err := testkit.StartFleet([]testkit.Spec{{Build: b}, {Build: b}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cdn, _ := testkit.StartCDN("/s/", b)
	defer cdn.Close()
	var calls []string
	o := fast()
	o.Discovered = func(n int) { calls = append(calls, fmt.Sprintf("discovered %d", n)) }
	o.Probed = func() { calls = append(calls, "probed") }
	if _, err := Verify(context.Background(), loadWorld(t, &testkit.World{Fleet: f, CDN: cdn, Good: b}, nil, nil), o); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"discovered 2", "probed"}) {
		t.Errorf("calls = %v", calls)
	}
}
