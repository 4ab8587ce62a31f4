package registry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// Record of several files: each parsed at its own URL path, the record holding the combined
// hash and the union's, and refusals where it could not say what an instance serves.
func TestRecordSeveralFiles(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	ctx := context.Background()
	a := []byte(`{"main.js":"main.1.js","shared.js":"/s/shared.1.js"}`)
	b := []byte(`{"index.js":"index.1.js","shared.js":"/s/shared.1.js"}`)
	ref := srv.Ref("web:v1")
	if _, err := regtest.Push(ctx, ref, regtest.Image{Layers: [][]regtest.File{
		{{Path: "/app/a.json", Data: a}}, {{Path: "/app/b.json", Data: b}},
	}}); err != nil {
		t.Fatal(err)
	}
	client := func(maxAssets int, paths ...string) *registry.Client {
		c, err := registry.New(registry.WithCacheDir(""), registry.WithTransport(loopbackOnly()),
			registry.WithManifestFormat(manifest.Auto, manifest.Options{Path: "/x/a.json", MaxAssets: maxAssets}),
			registry.WithManifestPaths(paths...))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	rec, err := client(0, "/x/a.json", "/y/b.json").Record(ctx, ref, "", "/app/a.json", "/app/b.json")
	if err != nil {
		t.Fatal(err)
	}
	wantAssets := manifest.AssetsSHA256([]model.Asset{{Ref: "/s/shared.1.js"}, {Ref: "/x/main.1.js"}, {Ref: "/y/index.1.js"}})
	wantManifest := manifest.CombinedSHA256([]manifest.Served{{Path: "/x/a.json", SHA256: sha(a)}, {Path: "/y/b.json", SHA256: sha(b)}})
	if rec.Assets != 3 || rec.AssetsSHA256 != wantAssets || rec.ManifestSHA256 != wantManifest || rec.ManifestFile != "" ||
		strings.Join(rec.ManifestFiles, ",") != "/app/a.json,/app/b.json" || strings.Join(rec.ManifestPaths, ",") != "/x/a.json,/y/b.json" {
		t.Errorf("record %+v", rec)
	}
	if err := registry.CheckRecordPaths(rec, []string{"/x/a.json", "/y/b.json"}); err != nil {
		t.Errorf("CheckRecordPaths of its own paths: %v", err)
	}
	for _, paths := range [][]string{nil, {"/x/a.json"}, {"/y/b.json", "/x/a.json"}} {
		if err := registry.CheckRecordPaths(rec, paths); err == nil {
			t.Errorf("CheckRecordPaths(%q) accepted a record of other paths", paths)
		}
	}

	one, err := client(0).Record(ctx, ref, "", "/app/a.json")
	if err != nil || one.ManifestFile != "/app/a.json" || one.ManifestSHA256 != sha(a) || len(one.ManifestFiles) != 0 {
		t.Errorf("one file: %+v, %v", one, err)
	}
	if err := registry.CheckRecordPaths(one, []string{"/x/a.json", "/y/b.json"}); err == nil || !strings.Contains(err.Error(), "holds one manifest") {
		t.Errorf("a record of one manifest judged two paths: %v", err)
	}

	for _, tc := range []struct {
		name string
		c    *registry.Client
		want string
	}{
		{"no paths", client(0), "2 manifest files need the URL path each is served at"},
		{"union over the cap", client(2, "/x/a.json", "/y/b.json"), "reference 3 assets together, more than 2"},
	} {
		if _, err := tc.c.Record(ctx, ref, "", "/app/a.json", "/app/b.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := client(0, "/x/a.json", "/y/b.json").Record(ctx, ref, "", "/app/a.json", "/app/missing.json"); err == nil || !strings.Contains(err.Error(), "/app/missing.json") {
		t.Errorf("missing second file: %v", err)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
