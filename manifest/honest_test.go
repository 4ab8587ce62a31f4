package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAutoRefusesNonManifests: flat JSON objects that are no manifest (a build ID, a version)
// are manifest-invalid under auto, naming the formats tried, never read as webpack.
func TestAutoRefusesNonManifests(t *testing.T) {
	for _, c := range []struct{ file, path string }{
		{"nonmanifest/nuxt-builds-latest.json", "/_nuxt/builds/latest.json"},
		{"nonmanifest/sveltekit-version.json", "/_app/version.json"},
		{"", "/version.json"},
	} {
		body := []byte(`{"version": "v2.31.0", "build": "1.2.3", "commit": "4f2a9c1"}`)
		if c.file != "" {
			body = readSample(t, c.file)
		}
		t.Run(c.path, func(t *testing.T) {
			m, err := Parse(Auto, body, Options{Path: c.path})
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Parse(auto) = %+v, %v; want *InvalidError", m, err)
			}
			if !strings.Contains(err.Error(), "tried ") || !strings.Contains(err.Error(), "webpack") {
				t.Errorf("error %q does not name the formats tried", err)
			}
		})
	}
	// A flat object whose values are asset paths is still webpack.
	m, err := Parse(Auto, []byte(`{"main.js": "/static/js/main.4f2a.js", "version": "1701"}`), Options{Path: "/manifest.json"})
	if err != nil || m.Format != "webpack" || len(m.Assets) != 2 {
		t.Fatalf("flat manifest: %+v, %v", m, err)
	}
}

// TestNoReferenceIsInvalid: a manifest from which no reference is read (a forced wrong format,
// an empty build manifest, every entry skipped) is manifest-invalid, never a pass.
func TestNoReferenceIsInvalid(t *testing.T) {
	cases := []struct {
		name string
		f    Format
		body string
		path string
	}{
		{"vite manifest read as ngsw-less sprockets", "sprockets", `{"files": {}, "assets": {}}`, "/manifest.json"},
		{"webpack read as vite", "vite", `{"main.js": "/static/js/main.js"}`, "/manifest.json"},
		{"only source maps", "webpack", `{"main.js.map": "/static/js/main.js.map"}`, "/manifest.json"},
		{"empty next app-build-manifest", "nextjs", string(readSample(t, "nextjs/app-build-manifest.empty.json")), "/app-build-manifest.json"},
		{"empty next app-build-manifest, auto", Auto, string(readSample(t, "nextjs/app-build-manifest.empty.json")), "/app-build-manifest.json"},
		{"html with no asset", "html", `<!doctype html><html><body>hello</body></html>`, "/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse(c.f, []byte(c.body), Options{Path: c.path})
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Parse(%s) = %+v, %v; want *InvalidError", c.f, m, err)
			}
		})
	}
}

// TestMaxAssets: a manifest referencing more unique assets than MaxAssets is invalid, one at the
// cap is read.
func TestMaxAssets(t *testing.T) {
	build := func(n int) []byte {
		var sb strings.Builder
		sb.WriteString("{")
		for i := range n {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `"c%d.js": "/static/js/c%d.js"`, i, i)
		}
		sb.WriteString("}")
		return []byte(sb.String())
	}
	if m, err := Parse(Auto, build(50), Options{Path: "/m.json", MaxAssets: 50}); err != nil || len(m.Assets) != 50 {
		t.Fatalf("at the cap: %v", err)
	}
	_, err := Parse(Auto, build(51), Options{Path: "/m.json", MaxAssets: 50})
	var ie *InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "max_assets") {
		t.Fatalf("over the cap: %v", err)
	}
	_, err = Parse(Auto, build(1000), Options{Path: "/m.json", MaxAssets: 50})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "more than 50") {
		t.Fatalf("far over the cap: %v", err)
	}
}
