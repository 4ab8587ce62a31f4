package registry_test

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// A record made by the client FromConfig builds hashes the asset set exactly as the prober
// will for an instance serving the same file under the same configuration, for every setting
// that changes the asset set.
func TestFromConfigHashesAsTheProber(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	const file = "/app/dist/.vite/manifest.json"
	body := []byte(`{"src/main.ts":{"file":"assets/main.4f2a.js","css":["assets/main.1b.css"],"assets":["assets/main.4f2a.js.map"],"isEntry":true}}`)
	ref := repo(t, srv.Host) + ":v1"
	mustPush(t, ref, regtest.Image{Layers: [][]regtest.File{{{Path: file, Data: body}}}})

	for name, yaml := range map[string]string{
		"defaults":       "release: {manifest_file: " + file + "}\n",
		"source maps":    "release: {manifest_file: " + file + "}\ncdn: {check_source_maps: true}\n",
		"path":           "release: {manifest_file: " + file + "}\nprobe: {manifest: {path: /app/.vite/manifest.json}}\n",
		"prefix, format": "release: {manifest_file: " + file + "}\nprobe: {manifest: {format: vite, asset_prefix: /static/}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(yaml), "polygraph.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			c, err := registry.FromConfig(cfg, registry.WithCacheDir(""), registry.WithKeychain(authn.NewMultiKeychain()), registry.WithRetryBackoff(fastBackoff))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := c.Record(context.Background(), ref, "", file)
			if err != nil {
				t.Fatal(err)
			}
			m := cfg.Probe.Manifest
			served, err := manifest.Parse(manifest.Format(m.Format), body, manifest.Options{Path: m.Path, AssetPrefix: m.AssetPrefix, SourceMaps: cfg.CDN.CheckSourceMaps})
			if err != nil {
				t.Fatal(err)
			}
			if want := manifest.AssetsSHA256(served.Assets); rec.AssetsSHA256 != want || rec.Assets != len(served.Assets) {
				t.Errorf("record: %d assets %s; the prober: %d assets %s", rec.Assets, rec.AssetsSHA256, len(served.Assets), want)
			}
		})
	}
}
