package run

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/registry"
)

// plainRecorder records the plain-HTTP requests it is handed and sends nothing anywhere.
type plainRecorder struct {
	mu    sync.Mutex
	plain []string
}

func (r *plainRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		r.mu.Lock()
		r.plain = append(r.plain, req.URL.Host)
		r.mu.Unlock()
	}
	return nil, errors.New("connection refused (recorded, never sent)")
}

// TestRegistryInsecureWired checks registry.insecure reaches the registry client: a listed
// private registry gets the plain-HTTP fallback, the same registry unlisted never does.
func TestRegistryInsecureWired(t *testing.T) {
	for _, listed := range []bool{false, true} {
		src := "release:\n  image: 10.1.2.3:5000/app:v1\n"
		if listed {
			src += "registry:\n  insecure: [\"10.1.2.3:5000\"]\n"
		}
		cfg, err := config.Parse([]byte(src), "polygraph.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		rec := &plainRecorder{}
		client, err := RegistryClient(cfg, nil, "test", registry.WithTransport(rec), registry.WithCacheDir(""),
			registry.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Steps: 1}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := client.Resolve(ctx, cfg.Release.Image); err == nil {
			t.Fatal("resolved through a transport that answers nothing")
		}
		cancel()
		if got := len(rec.plain) > 0; got != listed {
			t.Errorf("listed %v: plain-HTTP requests to %s", listed, strings.Join(rec.plain, ", "))
		}
	}
}
