package run_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestManifestPaths: with probe.manifest.paths, every manifest of an instance is compared and
// their assets are unioned: an instance whose second manifest differs is drift, an asset only
// the second manifest references is checked, and a path that is no manifest is
// manifest-invalid naming it.
func TestManifestPaths(t *testing.T) {
	pages := map[string]string{
		"/app/manifest.json":      `{"main.js": "/static/app/main.1.js"}`,
		"/pages/manifest.json":    `{"index.js": "/static/pages/index.1.js", "about.js": "/static/pages/about.1.js"}`,
		"/pages/manifest-v2.json": `{"index.js": "/static/pages/index.2.js"}`,
	}
	serve := func(second string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := r.URL.Path
			if p == "/pages/manifest.json" {
				p = second
			}
			body, ok := pages[p]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	addrs := []string{serve("/pages/manifest.json"), serve("/pages/manifest.json"), serve("/pages/manifest-v2.json"), serve("/nothing")}
	cdn, err := testkit.StartCDN("/store/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)
	cdn.Add("/static/app/main.1.js", "/static/pages/index.1.js", "/static/pages/index.2.js") // about.1.js is missing
	var y strings.Builder
	y.WriteString("fleet:\n  static:\n")
	for i, a := range addrs {
		fmt.Fprintf(&y, "    - {id: web-%d, address: %q}\n", i+1, a)
	}
	fmt.Fprintf(&y, "probe:\n  manifest:\n    paths: [/app/manifest.json, /pages/manifest.json]\ncdn:\n  base_urls: [%q]\n", cdn.URL)
	dir := t.TempDir()
	cfg, err := config.Parse([]byte(y.String()), filepath.Join(dir, "polygraph.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := run.Verify(ctx, cfg, run.Options{Probe: []probe.Option{probe.WithBackoff(probe.NoWait, 0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"web-1": {"asset-missing"},
		"web-2": {"asset-missing"},
		"web-3": {"content-drift"},
		"web-4": {"manifest-invalid"},
	}
	for id, k := range want {
		if got := kinds(rep, id); !slices.Equal(got, k) {
			t.Errorf("%s: findings %v, want %v", id, got, k)
		}
	}
	for _, f := range rep.Findings {
		switch f.Kind {
		case model.KindAssetMissing:
			if !strings.HasSuffix(f.URL, "/static/pages/about.1.js") || !slices.Equal(f.Instances, []string{"web-1", "web-2"}) {
				t.Errorf("asset-missing %+v", f)
			}
		case model.KindManifestInvalid:
			if !strings.Contains(f.Message, "/pages/manifest.json") {
				t.Errorf("manifest-invalid does not name the path: %s", f.Message)
			}
		}
	}
	if rep.Instances[0].Assets != 3 || rep.CDN.Checked != 4 {
		t.Errorf("instance assets %d, cdn %+v: want the union", rep.Instances[0].Assets, rep.CDN)
	}
}

// TestManifestPathsConfig: paths are validated with the file and line, and a
// release.manifest_file that does not give one file per path is refused rather than misjudged.
func TestManifestPathsConfig(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"probe:\n  manifest:\n    path: /a.json\n    paths: [/b.json]\n", "polygraph.yaml:4: probe.manifest.path and probe.manifest.paths are exclusive"},
		{"probe:\n  manifest:\n    paths: [/a.json, b.json]\n", "polygraph.yaml:3: probe.manifest.paths entry 2 must start with /"},
		{"probe:\n  manifest:\n    paths: [/a.json, /a.json]\n", "polygraph.yaml:3: probe.manifest.paths entry 2 repeats"},
		{"release:\n  image: r/x:v1\n  manifest_file: /app/a.json\nprobe:\n  manifest:\n    paths: [/a.json, /b.json]\n", "polygraph.yaml:3: release.manifest_file lists 1 file and probe.manifest.paths 2 paths"},
		{"cdn:\n  exclude: [static/x]\n", "polygraph.yaml:2: cdn.exclude entry \"static/x\": must be a root-relative path"},
		{"cdn:\n  exclude: ['/a**/x']\n", "polygraph.yaml:2: cdn.exclude entry \"/a**/x\": ** must be a whole path segment"},
		{"probe:\n  manifest:\n    max_assets: -1\n", "polygraph.yaml:3: probe.manifest.max_assets must be at least 1"},
	} {
		_, err := config.Parse([]byte(c.yaml), "polygraph.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}
