package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// TestRecordAgreesWithVerify records a release from a config and verifies an honest instance
// serving the very same manifest file against that record, with the same config: for every
// setting that changes the asset set, the record's assets_sha256 is the instance's and nothing
// is a content-mismatch.
func TestRecordAgreesWithVerify(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := regtest.NewServer()
	defer srv.Close()
	ctx := context.Background()
	// Relative paths (resolved against the manifest's URL path), a source map, a Next.js-style
	// path under a prefix and an absolute one: each setting below moves some of them.
	manifestJSON := []byte(`{"files":{"main.js":"static/js/main.1.js","main.js.map":"static/js/main.1.js.map",` +
		`"app.css":"/static/css/app.1.css","chunk":"chunks/c.1.js"},"entrypoints":["static/js/main.1.js"]}`)
	ref := srv.Ref("store-web:v1")
	if _, err := regtest.Push(ctx, ref, regtest.Image{Platform: "linux/amd64",
		Layers: [][]regtest.File{{{Path: "/app/dist/asset-manifest.json", Data: manifestJSON}}}}); err != nil {
		t.Fatal(err)
	}
	var served string // the URL path the instance serves the manifest at
	inst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != served {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(manifestJSON)
	}))
	defer inst.Close()
	addr := strings.TrimPrefix(inst.URL, "http://")

	cases := []struct {
		name string
		path string // probe.manifest.path
		yaml string // more probe.manifest / cdn settings
	}{
		{name: "defaults", path: "/asset-manifest.json"},
		{name: "source maps checked", path: "/asset-manifest.json", yaml: "cdn:\n  check_source_maps: true\n"},
		{name: "manifest under a sub-path", path: "/shop/asset-manifest.json"},
		{name: "format forced", path: "/asset-manifest.json", yaml: "probe:\n  manifest:\n    format: webpack\n"},
		{name: "asset prefix", path: "/asset-manifest.json", yaml: "probe:\n  manifest:\n    asset_prefix: /cdn-prefix/\n"},
		{name: "max assets", path: "/asset-manifest.json", yaml: "probe:\n  manifest:\n    max_assets: 4\n"},
		{name: "exclude", path: "/asset-manifest.json", yaml: "cdn:\n  exclude: [/static/css/**]\n"},
		{name: "everything", path: "/a/b/asset-manifest.json", yaml: "probe:\n  manifest:\n    format: webpack\n    asset_prefix: /p/\n    max_assets: 10\ncdn:\n  check_source_maps: true\n  exclude: ['/**/*.map']\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			served = c.path
			dir := t.TempDir()
			extra := c.yaml
			// probe.manifest.path joins the case's own probe.manifest section.
			if strings.Contains(extra, "  manifest:\n") {
				extra = strings.Replace(extra, "  manifest:\n", "  manifest:\n    path: "+c.path+"\n", 1)
			} else {
				extra += "probe:\n  manifest:\n    path: " + c.path + "\n"
			}
			base := "fleet:\n  static:\n    - {id: web-1, address: " + addr + "}\n" + extra
			recCfg := filepath.Join(dir, "record.yaml")
			write(t, recCfg, "release:\n  image: "+ref+"\n  manifest_file: /app/dist/asset-manifest.json\n"+base)
			recFile := filepath.Join(dir, "release.json")
			var stdout, stderr bytes.Buffer
			if code := runCLI(ctx, []string{"polygraph", "release", "record", "--config", recCfg, "--out", recFile, "-q"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("record: exit %d: %s", code, stderr.String())
			}
			verCfg := filepath.Join(dir, "verify.yaml")
			write(t, verCfg, "release:\n  record: release.json\n"+base)
			stdout.Reset()
			stderr.Reset()
			code := runCLI(ctx, []string{"polygraph", "verify", "--config", verCfg, "--output", "json"}, strings.NewReader(""), &stdout, &stderr)
			var rep model.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("verify: exit %d, %v: %s %s", code, err, stdout.String(), stderr.String())
			}
			if code != 0 || rep.Verdict != model.VerdictPass {
				t.Fatalf("verify: exit %d, verdict %s, findings %+v", code, rep.Verdict, rep.Findings)
			}
			if len(rep.Instances) != 1 || rep.Instances[0].AssetsSHA256 != rep.Release.AssetsSHA256 {
				t.Fatalf("instance assets %+v, release %+v", rep.Instances, rep.Release)
			}
		})
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
