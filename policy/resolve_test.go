package policy

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushRandom pushes a random image under ref to the in-process registry and returns its digest.
func pushRandom(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestResolve(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://") // 127.0.0.1:port
	old := pushRandom(t, host+"/shop/web:v1")
	cur := pushRandom(t, host+"/shop/web:v1") // the tag moves
	stable := pushRandom(t, host+"/shop/api:v2")
	latest := pushRandom(t, host+"/shop/api:latest")

	tests := []struct {
		name           string
		image          string
		wantRule       string
		wantSuggestion string
	}{
		{"mutable tag gets the digest to pin", host + "/shop/api:v2", RuleMutableTag, host + "/shop/api:v2@" + stable},
		{"implicit latest gets the digest of latest", host + "/shop/api", RuleLatestTag, host + "/shop/api@" + latest},
		{"tag@digest still current", host + "/shop/api:v2@" + stable, "", ""},
		{"tag@digest whose tag moved", host + "/shop/web:v1@" + old, RuleTagMoved, host + "/shop/web:v1@" + cur},
		{"digest only is never resolved", host + "/shop/nothere@" + old, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Inputs{Images: []Image{{File: "k.yaml", Line: 3, Column: 5, Raw: tt.image, Ref: tt.image, Where: "test"}}}
			r, err := Check(context.Background(), in, WithResolver(RemoteResolver()))
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRule == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("findings = %+v, want none", r.Findings)
				}
				return
			}
			if len(r.Findings) != 1 || r.Findings[0].Rule != tt.wantRule {
				t.Fatalf("findings = %+v, want one %s", r.Findings, tt.wantRule)
			}
			if got := r.Findings[0].Suggestion; got != tt.wantSuggestion {
				t.Errorf("suggestion = %q, want %q", got, tt.wantSuggestion)
			}
		})
	}
}

func TestResolveUnreachable(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there any more
	in := &Inputs{Images: []Image{{File: "k.yaml", Line: 7, Column: 9, Raw: host + "/a:v1", Ref: host + "/a:v1", Where: "test"}}}
	r, err := Check(context.Background(), in, WithResolver(RemoteResolver()))
	var re *ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("Check() = %v, %v; want a *ResolveError", r, err)
	}
	if re.File != "k.yaml" || re.Line != 7 || re.Image != host+"/a:v1" {
		t.Errorf("ResolveError = %+v", re)
	}
}

func TestResolveAsksOncePerTag(t *testing.T) {
	calls := 0
	res := ResolverFunc(func(ctx context.Context, tag name.Tag) (string, error) {
		calls++
		return "sha256:" + strings.Repeat("a", 64), nil
	})
	img := Image{File: "f", Line: 1, Column: 1, Raw: "nginx:1.25", Ref: "nginx:1.25"}
	in := &Inputs{Images: []Image{img, img, img}}
	if _, err := Check(context.Background(), in, WithResolver(res)); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("resolver called %d times, want 1", calls)
	}
}

func TestResolveConcurrencyBounded(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak, calls := 0, 0, map[string]int{}
	res := ResolverFunc(func(ctx context.Context, tag name.Tag) (string, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		calls[tag.Name()]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return "sha256:" + strings.Repeat("b", 64), nil
	})
	var imgs []Image
	for i := range 40 {
		ref := "ghcr.io/acme/svc" + strconv.Itoa(i%20) + ":v1"
		imgs = append(imgs, Image{File: "f", Line: i + 1, Column: 1, Raw: ref, Ref: ref})
	}
	r, err := Check(context.Background(), &Inputs{Images: imgs}, WithResolver(res))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 20 {
		t.Errorf("%d tags resolved, want 20", len(calls))
	}
	for tag, n := range calls {
		if n != 1 {
			t.Errorf("%s resolved %d times", tag, n)
		}
	}
	if peak > resolveConcurrency {
		t.Errorf("%d requests in flight, want at most %d", peak, resolveConcurrency)
	}
	for _, f := range r.Findings {
		if !strings.HasSuffix(f.Suggestion, "@sha256:"+strings.Repeat("b", 64)) {
			t.Errorf("finding %+v has no suggestion", f)
		}
	}
}
