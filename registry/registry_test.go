package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func TestLayerSemantics(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	base := []regtest.File{{Path: "/app/dist", Type: regtest.Dir}, {Path: manifestPath, Data: cra("main.base.js")}}
	tests := []struct {
		name   string
		layers [][]regtest.File // on top of base
		want   string           // substring of the content read; "" when an error is expected
		check  func(error) bool
	}{
		{name: "bottom layer", want: "main.base.js"},
		{name: "overwritten above", layers: [][]regtest.File{{{Path: manifestPath, Data: cra("main.top.js")}}}, want: "main.top.js"},
		{name: "unrelated layers above", layers: [][]regtest.File{{{Path: "/etc/x", Data: []byte("x")}}, {{Path: "/app/dist/other.json", Data: []byte("{}")}}}, want: "main.base.js"},
		{name: "whiteout of the file", layers: [][]regtest.File{{{Path: manifestPath, Type: regtest.Whiteout}}}, check: notFound("whiteout")},
		{name: "whiteout of a parent", layers: [][]regtest.File{{{Path: "/app", Type: regtest.Whiteout}}}, check: notFound("whiteout")},
		{name: "opaque parent", layers: [][]regtest.File{{{Path: "/app/dist", Type: regtest.Opaque}, {Path: "/app/dist/new.txt", Data: []byte("x")}}}, check: notFound("opaque")},
		{name: "opaque parent with the file re-added", layers: [][]regtest.File{{{Path: "/app/dist", Type: regtest.Opaque}, {Path: manifestPath, Data: cra("main.new.js")}}}, want: "main.new.js"},
		{name: "re-added above a whiteout", layers: [][]regtest.File{{{Path: manifestPath, Type: regtest.Whiteout}}, {{Path: manifestPath, Data: cra("main.again.js")}}}, want: "main.again.js"},
		{name: "a directory", layers: [][]regtest.File{{{Path: manifestPath, Type: regtest.Whiteout}}, {{Path: manifestPath, Type: regtest.Dir}}}, check: notRegular("directory")},
		{name: "a symlink", layers: [][]regtest.File{{{Path: manifestPath, Type: regtest.Symlink, Link: "/srv/m.json"}}}, check: notRegular("symlink")},
		{name: "a hardlink", layers: [][]regtest.File{{{Path: "/srv/m.json", Data: []byte("{}")}, {Path: manifestPath, Type: regtest.Hardlink, Link: "/srv/m.json"}}}, check: notRegular("hardlink")},
		{name: "parent is a symlink", layers: [][]regtest.File{{{Path: "/app/dist", Type: regtest.Symlink, Link: "/srv/dist"}}}, check: notRegular("symlink")},
		{name: "parent is a file", layers: [][]regtest.File{{{Path: "/app/dist", Data: []byte("x")}}}, check: notFound("regular file")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := repo(t, srv.Host) + ":v1"
			mustPush(t, ref, regtest.Image{Layers: append([][]regtest.File{base}, tt.layers...)})
			c, _ := newClient(t, t.TempDir())
			f, err := c.ReadFile(context.Background(), ref, "", manifestPath)
			if tt.want != "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(f.Data), tt.want) {
					t.Errorf("read %q, want %s", f.Data, tt.want)
				}
				return
			}
			if !tt.check(err) {
				t.Errorf("err = %v (%T)", err, errors.Unwrap(err))
			}
		})
	}
}

func notFound(reason string) func(error) bool {
	return func(err error) bool {
		var nf *registry.NotFoundError
		return errors.As(err, &nf) && nf.Path == manifestPath && strings.Contains(nf.Reason, reason)
	}
}

func notRegular(typ string) func(error) bool {
	return func(err error) bool {
		var nr *registry.NotRegularError
		return errors.As(err, &nr) && nr.Type == typ
	}
}

// middleware answers requests matching match with status (and no body), counting them.
func middleware(match func(*http.Request) bool, status int, n *atomic.Int64) regtest.ServerOption {
	return regtest.WithMiddleware(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if match(r) {
				n.Add(1)
				w.WriteHeader(status)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
}

func isManifest(method string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return (method == "" || r.Method == method) && strings.Contains(r.URL.Path, "/manifests/")
	}
}

func TestHeadFallback(t *testing.T) {
	tests := []struct {
		name string
		wrap func(w http.ResponseWriter) http.ResponseWriter // for HEAD of a manifest
	}{
		{name: "405", wrap: func(w http.ResponseWriter) http.ResponseWriter { return &statusWriter{w, http.StatusMethodNotAllowed} }},
		{name: "404", wrap: func(w http.ResponseWriter) http.ResponseWriter { return &statusWriter{w, http.StatusNotFound} }},
		{name: "no digest", wrap: func(w http.ResponseWriter) http.ResponseWriter { return &noDigestWriter{w} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var on atomic.Bool // off while pushing: the push HEADs too
			var gets atomic.Int64
			srv := regtest.NewServer(regtest.WithMiddleware(func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if on.Load() && strings.Contains(r.URL.Path, "/manifests/") {
						if r.Method == http.MethodHead {
							w = tt.wrap(w)
						} else {
							gets.Add(1)
						}
					}
					h.ServeHTTP(w, r)
				})
			}))
			defer srv.Close()
			ref := srv.Ref("app:v1")
			p := mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
			on.Store(true)
			c, _ := newClient(t, t.TempDir())
			set, err := c.Resolve(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if set.Digest != p.Digest {
				t.Errorf("Digest = %s, want %s", set.Digest, p.Digest)
			}
			if gets.Load() != 1 {
				t.Errorf("%d manifest GETs, want 1 (the fallback, reused by digest)", gets.Load())
			}
		})
	}
}

// statusWriter replaces the status of a response and drops its body.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(int)             { w.ResponseWriter.WriteHeader(w.status) }
func (w *statusWriter) Write(b []byte) (int, error) { return len(b), nil }

type noDigestWriter struct{ http.ResponseWriter }

func (w *noDigestWriter) WriteHeader(code int) {
	w.Header().Del("Docker-Content-Digest")
	w.ResponseWriter.WriteHeader(code)
}

func TestRegistryErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		check  func(error) bool
		msg    string
	}{
		{name: "rate limited", status: http.StatusTooManyRequests, msg: "rate limiting", check: func(err error) bool {
			var ue *registry.UnavailableError
			return errors.As(err, &ue) && ue.RateLimited && ue.Status == 429
		}},
		{name: "failing", status: http.StatusServiceUnavailable, msg: "failing (HTTP 503)", check: func(err error) bool {
			var ue *registry.UnavailableError
			return errors.As(err, &ue) && !ue.RateLimited && ue.Status == 503
		}},
		{name: "unauthorized", status: http.StatusUnauthorized, msg: "not authorized", check: func(err error) bool {
			var ae *registry.AuthError
			return errors.As(err, &ae)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			srv := regtest.NewServer(middleware(isManifest(""), tt.status, &n))
			defer srv.Close()
			c, _ := newClient(t, t.TempDir())
			_, err := c.Resolve(context.Background(), srv.Ref("app:v1"))
			if !tt.check(err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want a typed error saying %q", err, tt.msg)
			}
			// The library retries (fastBackoff: 2 attempts); we add none on top.
			if tt.status != http.StatusUnauthorized && n.Load() != int64(fastBackoff.Steps) {
				t.Errorf("%d manifest requests, want %d (the library's attempts only)", n.Load(), fastBackoff.Steps)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := regtest.NewServer(regtest.WithMiddleware(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") {
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}))
	defer srv.Close()
	defer close(release)
	c, _ := newClient(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Resolve(ctx, srv.Ref("app:v1"))
	var ue *registry.UnavailableError
	if !errors.As(err, &ue) || !ue.Timeout || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want *UnavailableError with Timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %s, past the 200ms deadline", d)
	}
}

// A registry that keeps failing makes the library back off (1s, then 3s) without watching the
// context; the client must still return at the deadline.
func TestDeadlineDuringBackoff(t *testing.T) {
	srv := regtest.NewServer(regtest.WithMiddleware(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	}))
	defer srv.Close()
	c, err := registry.New(registry.WithCacheDir(""), registry.WithTransport(loopbackOnly()))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		name string
		f    func(context.Context) error
	}{
		{"resolve", func(ctx context.Context) error { _, err := c.Resolve(ctx, srv.Ref("app:v1")); return err }},
		{"read", func(ctx context.Context) error {
			_, err := c.ReadFile(ctx, srv.Ref("app:v1"), "", "/a.json")
			return err
		}},
		{"record", func(ctx context.Context) error { _, err := c.Record(ctx, srv.Ref("app:v1"), "", "/a.json"); return err }},
	} {
		t.Run(call.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := call.f(ctx)
			var ue *registry.UnavailableError
			if !errors.As(err, &ue) {
				t.Errorf("err = %v, want *UnavailableError", err)
			}
			if d := time.Since(start); d > 800*time.Millisecond {
				t.Errorf("returned after %s, past the 300ms deadline (the library's 1s backoff sleep)", d)
			}
		})
	}
}

func TestEquivalent(t *testing.T) {
	const (
		idx = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		man = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
		cfg = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
		oth = "sha256:4444444444444444444444444444444444444444444444444444444444444444"
	)
	set := &registry.DigestSet{Digest: idx, Digests: []model.RecordDigest{
		{Digest: idx, Kind: "index"}, {Digest: man, Kind: "manifest", Platform: "linux/amd64"}, {Digest: cfg, Kind: "config", Platform: "linux/amd64"},
	}}
	tests := []struct {
		name   string
		digest string
		want   bool
	}{
		{"index", idx, true},
		{"platform manifest", man, true},
		{"config (docker .Image)", cfg, true},
		{"repo digest", "registry.example.com/store@" + idx, true},
		{"upper case and spaces", " " + strings.ToUpper(man) + "\n", true},
		{"bare hex", strings.TrimPrefix(cfg, "sha256:"), true},
		{"other", oth, false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := registry.Equivalent(set, tt.digest); got != tt.want {
				t.Errorf("Equivalent(%q) = %v, want %v", tt.digest, got, tt.want)
			}
		})
	}
	if registry.Equivalent(nil, idx) {
		t.Error("a nil set is equivalent")
	}
	rec := &model.ReleaseRecord{Digest: idx, Digests: set.Digests}
	if registry.TagMoved(rec, set) || !registry.TagMoved(rec, &registry.DigestSet{Digest: oth}) {
		t.Error("TagMoved is wrong")
	}
}

func TestMaxLayerSize(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	ref := srv.Ref("app:v1")
	mustPush(t, ref, regtest.Image{Layers: [][]regtest.File{{{Path: "/big.bin", RandomSize: 1 << 20}, {Path: manifestPath, Data: cra("a.js")}}}})
	c, _ := newClient(t, t.TempDir(), registry.WithMaxLayerSize(64<<10))
	_, err := c.ReadFile(context.Background(), ref, "", manifestPath)
	if err == nil || !strings.Contains(err.Error(), "layer size limit") {
		t.Errorf("err = %v, want the layer size limit", err)
	}
}

func TestCorruptCacheIsRefetched(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	ref := srv.Ref("app:v1")
	mustPush(t, ref, webImage("linux/amd64", "main.a.js"))
	dir := t.TempDir()
	c, _ := newClient(t, dir)
	if _, err := c.ReadFile(context.Background(), ref, "", manifestPath); err != nil {
		t.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "v1", "blobs", "sha256", "*"))
	if len(blobs) == 0 {
		t.Fatal("nothing cached")
	}
	for _, b := range blobs {
		if err := os.WriteFile(b, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, ctr := newClient(t, dir)
	f, err := c.ReadFile(context.Background(), ref, "", manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.Data), "main.a.js") || ctr.Stats().BlobRequests == 0 {
		t.Errorf("read %q with %+v, want the file re-fetched", f.Data, ctr.Stats())
	}
}

func TestLoadRecord(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, body, err string
	}{
		{name: "ok", body: `{"schema":"polygraph.release/v1","image":"r/a:v1","digest":"sha256:1","digests":[{"digest":"sha256:1","kind":"index"}],"assets":0,"recorded_at":"2026-11-29T12:00:00Z"}`},
		{name: "other schema", body: `{"schema":"polygraph.release/v2","digest":"sha256:1"}`, err: "schema"},
		{name: "unknown field", body: `{"schema":"polygraph.release/v1","digest":"sha256:1","extra":1}`, err: "unknown field"},
		{name: "no digest", body: `{"schema":"polygraph.release/v1"}`, err: "no digest"},
		{name: "not json", body: `<html>`, err: "invalid character"},
		{name: "files without paths", body: `{"schema":"polygraph.release/v1","digest":"sha256:1","manifest_files":["/a","/b"],"manifest_paths":["/a"]}`, err: "2 manifest_files but 1 manifest_paths"},
		{name: "file and files", body: `{"schema":"polygraph.release/v1","digest":"sha256:1","manifest_file":"/a","manifest_files":["/a","/b"],"manifest_paths":["/a","/b"]}`, err: "both manifest_file and manifest_files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := registry.LoadRecord(write(strings.ReplaceAll(tt.name, " ", "-")+".json", tt.body))
			if tt.err == "" {
				if err != nil || rec.Digest != "sha256:1" {
					t.Fatalf("LoadRecord = %+v, %v", rec, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// loopbackOnly is a transport that refuses, before any lookup or packet, every address that is
// not loopback.
func loopbackOnly() *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("refusing to dial %s: tests only talk to loopback", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}
