package registry_test

import (
	"context"
	"fmt"
	"os"

	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// A release built for two platforms, recorded in CI, then re-pushed under the same tag.
func Example() {
	ctx := context.Background()
	srv := regtest.NewServer()
	defer srv.Close()
	ref := srv.Ref("store-web:v2.31.0")
	manifestFile := "/app/dist/asset-manifest.json"
	build := func(main string) regtest.Index {
		files := [][]regtest.File{{{Path: manifestFile, Data: []byte(`{"files":{"main.js":"/static/js/` + main + `"}}`)}}}
		return regtest.Index{Attestation: true, Images: []regtest.Image{
			{Platform: "linux/amd64", Layers: files}, {Platform: "linux/arm64", Layers: files},
		}}
	}
	pushed, _ := regtest.PushIndex(ctx, ref, build("main.4f2a.js"))

	cache, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(cache)
	c, err := registry.New(registry.WithCacheDir(cache))
	if err != nil {
		panic(err)
	}
	rec, err := c.Record(ctx, ref, "linux/amd64", manifestFile)
	if err != nil {
		panic(err)
	}
	fmt.Println("digests in the set:", len(rec.Digests), "assets:", rec.Assets)

	set := registry.SetFromRecord(rec)
	fmt.Println("arm64 config is the same release:", registry.Equivalent(set, pushed.Images[1].Config))
	fmt.Println("attestation is the same release:", registry.Equivalent(set, pushed.Attestation))

	regtest.PushIndex(ctx, ref, build("main.9c1d.js")) // the incident: same tag, new build
	now, _ := c.Resolve(ctx, ref)
	fmt.Println("tag moved:", registry.TagMoved(rec, now))
	// Output:
	// digests in the set: 5 assets: 1
	// arm64 config is the same release: true
	// attestation is the same release: false
	// tag moved: true
}
