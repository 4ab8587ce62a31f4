package run

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// TestManifestFormatsEndToEnd runs polygraph verify over a simulated fleet serving a real
// manifest of every format (manifest/testdata): with every asset on the CDN the run
// passes; with one removed, asset-missing names it and both instances.
func TestManifestFormatsEndToEnd(t *testing.T) {
	cases := []struct {
		format, file, path, contentType string
	}{
		{"webpack", "webpack/manifest.json", "/manifest.json", "application/json"},
		{"webpack", "webpack/asset-manifest.json", "/asset-manifest.json", "application/json"},
		{"webpack-assets", "webpacker/public/packs/manifest.json", "/packs/manifest.json", "application/json"},
		{"vite", "vite/manifest.json", "/.vite/manifest.json", "application/json"},
		{"ngsw", "ngsw/ngsw.json", "/shop/ngsw.json", "application/json"},
		{"sprockets", "sprockets/public/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json", "/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json", "application/json"},
		{"propshaft", "propshaft/public/assets/.manifest.json", "/assets/.manifest.json", "application/json"},
		{"mix", "laravel-mix/public/mix-manifest.json", "/mix-manifest.json", "application/json"},
		{"nextjs", "nextjs/build-manifest.json", "/build-manifest.json", "application/json"},
		{"parcel", "parcel/parcel-manifest.json", "/parcel-manifest.json", "application/json"},
		{"html", "html-edge-cases/index.html", "/shop/products/index.html", "text/html; charset=utf-8"},
	}
	for _, tc := range cases {
		t.Run(tc.format+" "+filepath.Base(tc.file), func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "..", "manifest", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			m, err := manifest.Parse(manifest.Format(tc.format), body, manifest.Options{Path: tc.path})
			if err != nil {
				t.Fatal(err)
			}
			// The CDN holds every root-relative asset (it keys on the decoded path, without the
			// query).
			var assets []string
			for _, a := range m.Assets {
				if rootRelative(a.Ref) {
					p, _, _ := strings.Cut(a.Ref, "?")
					if p, err = url.PathUnescape(p); err != nil {
						t.Fatal(err)
					}
					assets = append(assets, p)
				}
			}
			if len(assets) < 3 {
				t.Fatalf("only %d assets: %v", len(assets), m.Assets)
			}
			b := &testkit.Build{Name: tc.file, Manifest: body, ContentType: tc.contentType, Assets: assets}
			cdn, err := testkit.StartCDN("/s/", b)
			if err != nil {
				t.Fatal(err)
			}
			defer cdn.Close()
			f, err := testkit.StartFleet([]testkit.Spec{{ID: "a", Build: b, Version: "v1"}, {ID: "b", Build: b, Version: "v1"}}, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w := &testkit.World{Fleet: f, CDN: cdn, Good: b, Version: "v1"}
			withFormat := func(format string) func(string) string {
				return func(s string) string {
					return strings.Replace(s, "    path: "+tc.path+"\n", "    path: "+tc.path+"\n    format: "+format+"\n", 1)
				}
			}

			for _, format := range []string{"auto", tc.format} {
				r, err := Verify(context.Background(), loadWorld(t, w, nil, withFormat(format)), fast())
				if err != nil {
					t.Fatal(err)
				}
				if r.Verdict != model.VerdictPass || len(r.Findings) != 0 {
					t.Fatalf("format %s: verdict %s, findings %+v", format, r.Verdict, r.Findings)
				}
				if r.CDN.Checked != len(m.Assets)-countAbsolute(m) {
					t.Errorf("format %s: CDN checked %d, want %d", format, r.CDN.Checked, len(m.Assets)-countAbsolute(m))
				}
				cdn.ResetHits()
			}

			victim := assets[len(assets)/2]
			cdn.Remove(victim)
			r, err := Verify(context.Background(), loadWorld(t, w, nil, nil), fast())
			if err != nil {
				t.Fatal(err)
			}
			var missing []model.Finding
			for _, f := range r.Findings {
				if f.Kind == model.KindAssetMissing {
					missing = append(missing, f)
				}
			}
			if len(missing) != 1 || !strings.Contains(missing[0].URL, "/s"+victim) || !slices.Equal(missing[0].Instances, []string{"a", "b"}) {
				t.Fatalf("removed %s: asset-missing findings %+v (all: %+v)", victim, missing, r.Findings)
			}
			if r.Verdict != model.VerdictFail {
				t.Errorf("verdict %s", r.Verdict)
			}
		})
	}
}

func countAbsolute(m *manifest.Manifest) int {
	n := 0
	for _, a := range m.Assets {
		if !rootRelative(a.Ref) {
			n++
		}
	}
	return n
}

func rootRelative(ref string) bool {
	return strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//")
}
