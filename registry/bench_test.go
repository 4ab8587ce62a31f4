package registry_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// bigImage is n layers of size random bytes each, with the manifest in the top layer.
func bigImage(n int, size int64) regtest.Image {
	var img regtest.Image
	for i := range n {
		img.Layers = append(img.Layers, []regtest.File{{Path: fmt.Sprintf("/data/blob-%02d.bin", i), RandomSize: size}})
	}
	top := &img.Layers[n-1]
	*top = append(*top, regtest.File{Path: manifestPath, Data: cra("main.a.js")})
	return img
}

// TestReadFileDownloadsOnlyTopLayer checks that a file in the top layer costs one layer
// download cold (plus the small config blob), and nothing warm.
func TestReadFileDownloadsOnlyTopLayer(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	const size = 256 << 10
	ref := srv.Ref("big:v1")
	mustPush(t, ref, bigImage(10, size))
	dir := t.TempDir()
	c, ctr := newClient(t, dir)
	if _, err := c.ReadFile(context.Background(), ref, "", manifestPath); err != nil {
		t.Fatal(err)
	}
	if s := ctr.Stats(); s.BlobRequests != 2 || s.Bytes < size || s.Bytes > 2*size {
		t.Errorf("cold: %+v, want 2 blob requests (config, top layer) and about %d bytes", s, size)
	}
	c, ctr = newClient(t, dir)
	if _, err := c.ReadFile(context.Background(), ref, "", manifestPath); err != nil {
		t.Fatal(err)
	}
	if s := ctr.Stats(); s.BlobRequests != 0 || s.Bytes > 4096 {
		t.Errorf("warm: %+v, want no blob requests", s)
	}
}

// BenchmarkReadManifest resolves an image of 10 layers of 20 MB (incompressible) and reads the
// manifest out of its top layer, with a cold cache (one layer downloaded) and a warm one
// (nothing downloaded), against the in-process registry and, when POLYGRAPH_INTEROP_REGISTRY
// is set, the real one. It reports the bytes downloaded, blob GETs and requests per run.
func BenchmarkReadManifest(b *testing.B) {
	srv := regtest.NewServer(regtest.WithBlobDir(b.TempDir())) // keep 200 MB out of memory
	defer srv.Close()
	b.Run("in-process", func(b *testing.B) { benchReadManifest(b, srv.Host) })
	if host := os.Getenv("POLYGRAPH_INTEROP_REGISTRY"); host != "" {
		b.Run("distribution", func(b *testing.B) { benchReadManifest(b, host) })
	}
}

func benchReadManifest(b *testing.B, host string) {
	ref := repo(b, host) + ":v1"
	mustPush(b, ref, bigImage(10, 20<<20))
	ctx := context.Background()
	report := func(b *testing.B, total regtest.Stats) {
		n := float64(b.N)
		b.ReportMetric(float64(total.Bytes)/n, "downloaded-B/op")
		b.ReportMetric(float64(total.BlobRequests)/n, "blob-GETs/op")
		b.ReportMetric(float64(total.Requests)/n, "requests/op")
	}
	add := func(t *regtest.Stats, s regtest.Stats) {
		t.Bytes, t.BlobRequests, t.Requests = t.Bytes+s.Bytes, t.BlobRequests+s.BlobRequests, t.Requests+s.Requests
	}

	b.Run("cold", func(b *testing.B) {
		var total regtest.Stats
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir, err := os.MkdirTemp("", "polygraph-bench-")
			if err != nil {
				b.Fatal(err)
			}
			c, ctr := newClient(b, dir)
			b.StartTimer()
			if _, err := c.ReadFile(ctx, ref, "", manifestPath); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			add(&total, ctr.Stats())
			os.RemoveAll(dir)
			b.StartTimer()
		}
		report(b, total)
	})

	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		c, _ := newClient(b, dir)
		if _, err := c.ReadFile(ctx, ref, "", manifestPath); err != nil {
			b.Fatal(err)
		}
		var total regtest.Stats
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c, ctr := newClient(b, dir) // a new run: new client, same cache
			if _, err := c.ReadFile(ctx, ref, "", manifestPath); err != nil {
				b.Fatal(err)
			}
			add(&total, ctr.Stats())
		}
		report(b, total)
	})
}
