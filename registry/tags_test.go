package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func TestListTagsAndInspect(t *testing.T) {
	ctx := context.Background()
	reg := regtest.NewServer()
	defer reg.Close()
	built := time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)
	var pushed []*regtest.Pushed
	for i, tag := range []string{"v1", "v2", "v3"} {
		p, err := regtest.PushIndex(ctx, reg.Ref("app:"+tag), regtest.Index{Images: []regtest.Image{
			{Platform: "linux/amd64", Created: built.Add(time.Duration(i) * time.Hour), Layers: [][]regtest.File{{{Path: "/v", Data: []byte(tag)}}}},
			{Platform: "linux/arm64", Created: built.Add(time.Duration(i) * time.Hour), Layers: [][]regtest.File{{{Path: "/v", Data: []byte(tag + "-arm")}}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		pushed = append(pushed, p)
	}
	c, err := registry.New(registry.WithCacheDir(""), registry.WithTransport(loopbackOnly()))
	if err != nil {
		t.Fatal(err)
	}
	tags, truncated, err := c.ListTags(ctx, reg.Ref("app"))
	if err != nil || truncated || !slices.Equal(tags, []string{"v1", "v2", "v3"}) {
		t.Fatalf("tags %v, truncated %v, err %v", tags, truncated, err)
	}
	im, err := c.Inspect(ctx, reg.Ref("app:v2"), "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if !im.Created.Equal(built.Add(time.Hour)) || im.Set.Digest != pushed[1].Digest || !registry.Equivalent(im.Set, pushed[1].Images[1].Config) {
		t.Errorf("inspect v2: created %v, digest %s", im.Created, im.Set.Digest)
	}
	if _, err := c.Inspect(ctx, reg.Ref("app:v2"), "linux/s390x"); !errors.As(err, new(*registry.NotFoundError)) {
		t.Errorf("inspecting a missing platform: %v", err)
	}
	if _, _, err := c.ListTags(ctx, reg.Ref("nothing")); !errors.As(err, new(*registry.NotFoundError)) {
		t.Errorf("listing a missing repository: %T %v", err, err)
	}
}
