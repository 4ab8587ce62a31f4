package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

const manifestPath = "/app/dist/asset-manifest.json"

func cra(main string) []byte {
	return []byte(fmt.Sprintf(`{"files":{"main.js":"/static/js/%s","main.css":"/static/css/main.1.css","index.html":"/index.html"},"entrypoints":["static/js/%s"]}`, main, main))
}

// fastBackoff keeps failing tests quick: two attempts, 1ms apart.
var fastBackoff = remote.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 2}

// newClient makes a hermetic client (anonymous, fast retries) counting its traffic.
func newClient(t testing.TB, cacheDir string, opts ...registry.Option) (*registry.Client, *regtest.Counter) {
	t.Helper()
	ctr := &regtest.Counter{}
	base := []registry.Option{
		registry.WithTransport(ctr),
		registry.WithCacheDir(cacheDir),
		registry.WithRetryBackoff(fastBackoff),
		registry.WithKeychain(authn.NewMultiKeychain()),
		registry.WithPolygraphVersion("test"),
		registry.WithClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }),
	}
	c, err := registry.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, ctr
}

var unsafeRepo = regexp.MustCompile(`[^a-z0-9]+`)

// repo returns a repository name unique to the test and the run (real registries persist).
func repo(t testing.TB, host string) string {
	n := strings.Trim(unsafeRepo.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	return fmt.Sprintf("%s/polygraph-test/%s-%d", host, n, time.Now().UnixNano())
}

func mustPush(t testing.TB, ref string, img regtest.Image) *regtest.Pushed {
	t.Helper()
	p, err := regtest.Push(context.Background(), ref, img)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func webImage(platform, main string, extra ...[]regtest.File) regtest.Image {
	layers := [][]regtest.File{
		{{Path: "/etc/os-release", Data: []byte("ID=test\n")}},
		{{Path: "/app/dist", Type: regtest.Dir}, {Path: manifestPath, Data: cra(main)}},
	}
	return regtest.Image{Platform: platform, Layers: append(layers, extra...)}
}

// runScenarios runs the behaviour every registry must give, against the registry at host.
func runScenarios(t *testing.T, host string) {
	ctx := context.Background()

	t.Run("single-arch", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		p := mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
		c, _ := newClient(t, t.TempDir())
		set, err := c.Resolve(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if set.Digest != p.Digest {
			t.Errorf("Digest = %s, want %s", set.Digest, p.Digest)
		}
		want := []model.RecordDigest{
			{Digest: p.Digest, Kind: "manifest", Platform: "linux/amd64"},
			{Digest: p.Images[0].Config, Kind: "config", Platform: "linux/amd64"},
		}
		if fmt.Sprint(set.Digests) != fmt.Sprint(want) {
			t.Errorf("Digests = %v, want %v", set.Digests, want)
		}
		f, err := c.ReadFile(ctx, ref, "linux/amd64", manifestPath)
		if err != nil {
			t.Fatal(err)
		}
		if string(f.Data) != string(cra("main.a.js")) || f.LayerIndex != 1 {
			t.Errorf("ReadFile = layer %d %q", f.LayerIndex, f.Data)
		}
		// By digest too.
		if _, err := c.ReadFile(ctx, strings.SplitN(ref, ":v1", 2)[0]+"@"+p.Digest, "", manifestPath); err != nil {
			t.Errorf("ReadFile by digest: %v", err)
		}
	})

	t.Run("multi-arch index", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		p, err := regtest.PushIndex(ctx, ref, regtest.Index{
			Images:      []regtest.Image{webImage("linux/amd64", "main.amd.js"), webImage("linux/arm64/v8", "main.arm.js")},
			Attestation: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := newClient(t, t.TempDir())
		set, err := c.Resolve(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		want := []model.RecordDigest{
			{Digest: p.Digest, Kind: "index"},
			{Digest: p.Images[0].Manifest, Kind: "manifest", Platform: "linux/amd64"},
			{Digest: p.Images[0].Config, Kind: "config", Platform: "linux/amd64"},
			{Digest: p.Images[1].Manifest, Kind: "manifest", Platform: "linux/arm64/v8"},
			{Digest: p.Images[1].Config, Kind: "config", Platform: "linux/arm64/v8"},
		}
		if fmt.Sprint(set.Digests) != fmt.Sprint(want) {
			t.Errorf("Digests =\n%v, want\n%v", set.Digests, want)
		}
		for _, d := range p.Digests() {
			if !registry.Equivalent(set, d) {
				t.Errorf("Equivalent(%s) = false, want true", d)
			}
		}
		if registry.Equivalent(set, p.Attestation) {
			t.Errorf("the attestation manifest %s counts as the release", p.Attestation)
		}
		for platform, main := range map[string]string{"linux/amd64": "main.amd.js", "linux/arm64": "main.arm.js", "linux/arm64/v8": "main.arm.js"} {
			f, err := c.ReadFile(ctx, ref, platform, manifestPath)
			if err != nil {
				t.Fatalf("%s: %v", platform, err)
			}
			if !strings.Contains(string(f.Data), main) {
				t.Errorf("%s: read %q, want %s", platform, f.Data, main)
			}
		}
		_, err = c.ReadFile(ctx, ref, "linux/s390x", manifestPath)
		var nf *registry.NotFoundError
		if !errors.As(err, &nf) || nf.Path != "" || nf.Platform != "linux/s390x" {
			t.Errorf("missing platform: err = %v, want *NotFoundError for the platform", err)
		}
	})

	t.Run("tag re-push", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		first := mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
		c, _ := newClient(t, t.TempDir())
		rec, err := c.Record(ctx, ref, "", manifestPath)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Digest != first.Digest || rec.Assets != 3 || rec.Schema != model.RecordSchema {
			t.Errorf("record = %+v", rec)
		}
		second := mustPush(t, ref, webImage("linux/amd64", "main.b.js"))
		now, err := c.Resolve(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if now.Digest != second.Digest || !registry.TagMoved(rec, now) {
			t.Errorf("after re-push: resolved %s (want %s), TagMoved = %v", now.Digest, second.Digest, registry.TagMoved(rec, now))
		}
		if registry.Equivalent(registry.SetFromRecord(rec), second.Digest) {
			t.Error("the re-pushed image counts as the recorded release")
		}
		rec2, err := c.Record(ctx, ref, "", manifestPath)
		if err != nil {
			t.Fatal(err)
		}
		if rec2.ManifestSHA256 == rec.ManifestSHA256 || rec2.AssetsSHA256 == rec.AssetsSHA256 {
			t.Error("the rebuilt artifact records the same manifest and asset hashes")
		}
	})

	t.Run("whiteout hides the manifest", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		mustPush(t, ref, webImage("linux/amd64", "main.a.js", []regtest.File{{Path: manifestPath, Type: regtest.Whiteout}}))
		c, _ := newClient(t, t.TempDir())
		_, err := c.ReadFile(ctx, ref, "", manifestPath)
		var nf *registry.NotFoundError
		if !errors.As(err, &nf) || nf.Path != manifestPath || !strings.Contains(nf.Reason, "whiteout") {
			t.Errorf("err = %v, want *NotFoundError naming the whiteout", err)
		}
	})

	t.Run("manifest too large", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		mustPush(t, ref, regtest.Image{Layers: [][]regtest.File{{{Path: manifestPath, RandomSize: 4096}}}})
		c, _ := newClient(t, t.TempDir(), registry.WithMaxFileSize(1024))
		_, err := c.ReadFile(ctx, ref, "", manifestPath)
		var tl *registry.TooLargeError
		if !errors.As(err, &tl) || tl.Size != 4096 || tl.Limit != 1024 {
			t.Errorf("err = %v, want *TooLargeError 4096 > 1024", err)
		}
	})

	t.Run("missing file", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
		c, _ := newClient(t, t.TempDir())
		_, err := c.ReadFile(ctx, ref, "", "/app/dist/manifest.json")
		var nf *registry.NotFoundError
		if !errors.As(err, &nf) || nf.Path != "/app/dist/manifest.json" {
			t.Errorf("err = %v, want *NotFoundError for the file", err)
		}
	})

	t.Run("missing image", func(t *testing.T) {
		ref := repo(t, host) + ":nope"
		c, _ := newClient(t, t.TempDir())
		_, err := c.Resolve(ctx, ref)
		var nf *registry.NotFoundError
		if !errors.As(err, &nf) || nf.Path != "" {
			t.Errorf("err = %v, want *NotFoundError for the image", err)
		}
	})

	t.Run("registry down", func(t *testing.T) {
		c, _ := newClient(t, t.TempDir())
		_, err := c.Resolve(ctx, closedPort(t)+"/app:v1")
		var ue *registry.UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("err = %v, want *UnavailableError saying unreachable", err)
		}
	})

	t.Run("warm cache downloads nothing", func(t *testing.T) {
		ref := repo(t, host) + ":v1"
		mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
		dir := t.TempDir()
		cold, _ := newClient(t, dir)
		if _, err := cold.Record(ctx, ref, "", manifestPath); err != nil {
			t.Fatal(err)
		}
		warm, ctr := newClient(t, dir)
		if _, err := warm.Record(ctx, ref, "", manifestPath); err != nil {
			t.Fatal(err)
		}
		if s := ctr.Stats(); s.BlobRequests != 0 {
			t.Errorf("warm run: %+v, want no blob requests", s)
		}
	})
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestInProcessRegistry(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	runScenarios(t, srv.Host)
}

// TestInterop runs the scenarios against a real registry (CNCF distribution, started by
// .ci/run) when POLYGRAPH_INTEROP_REGISTRY names it.
func TestInterop(t *testing.T) {
	host := os.Getenv("POLYGRAPH_INTEROP_REGISTRY")
	if host == "" {
		t.Skip("POLYGRAPH_INTEROP_REGISTRY is not set; .ci/run starts a real registry and sets it (see .ci/start-registry.sh)")
	}
	if h, _, err := net.SplitHostPort(host); err != nil || !net.ParseIP(h).IsLoopback() {
		t.Fatalf("POLYGRAPH_INTEROP_REGISTRY=%q: tests only talk to loopback addresses (127.0.0.1:PORT)", host)
	}
	runScenarios(t, host)
}

func TestRegistryDown(t *testing.T) {
	c, _ := newClient(t, t.TempDir())
	ref := closedPort(t) + "/app:v1"
	for name, call := range map[string]func() error{
		"resolve": func() error { _, err := c.Resolve(context.Background(), ref); return err },
		"record":  func() error { _, err := c.Record(context.Background(), ref, "", manifestPath); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			var ue *registry.UnavailableError
			if !errors.As(err, &ue) || ue.RateLimited {
				t.Fatalf("err = %v, want *UnavailableError", err)
			}
			if !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("message %q does not say the registry is unreachable", err)
			}
		})
	}
}
