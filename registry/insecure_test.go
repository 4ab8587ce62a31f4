package registry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polygraph-dev/polygraph/registry"
)

// recorder is a transport that sends nothing anywhere: it records each request's URL and
// answers from answer (nil answer: a refused connection, as an HTTPS port that is closed).
type recorder struct {
	mu     sync.Mutex
	urls   []string
	answer func(*http.Request) *http.Response
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	r.mu.Unlock()
	if r.answer != nil {
		if resp := r.answer(req); resp != nil {
			resp.Request = req
			return resp, nil
		}
	}
	return nil, errors.New("connection refused (recorded, never sent)")
}

func (r *recorder) plain() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.urls {
		if strings.HasPrefix(u, "http://") {
			out = append(out, u)
		}
	}
	return out
}

func TestPlainHTTPOnlyToLoopbackAndListed(t *testing.T) {
	tests := []struct {
		name      string
		ref       string
		listed    []string
		wantPlain bool // a plain-HTTP request reaches the transport
	}{
		{"RFC 1918 address, not listed", "10.1.2.3:5000/app:v1", nil, false},
		{"RFC 1918 address, listed with its port", "10.1.2.3:5000/app:v1", []string{"10.1.2.3:5000"}, true},
		{"RFC 1918 address, listed without a port", "192.168.1.9:5000/app:v1", []string{"192.168.1.9"}, true},
		{"listed on another port", "10.1.2.3:5000/app:v1", []string{"10.1.2.3:5001"}, false},
		{".local name, not listed", "registry.local:5000/app:v1", nil, false},
		{"name listed, case-insensitive", "Registry.Internal:5000/app:v1", []string{"registry.internal:5000"}, true},
		{"public registry, not listed", "registry.example.com/app:v1", nil, false},
		{"other host listed", "registry.example.com/app:v1", []string{"mirror.example.com"}, false},
		{"loopback 127.0.0.1", "127.0.0.1:5000/app:v1", nil, true},
		{"loopback elsewhere in 127/8", "127.9.8.7:5000/app:v1", nil, true},
		{"loopback ::1", "[::1]:5000/app:v1", nil, true},
		{"localhost", "localhost:5000/app:v1", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c, err := registry.New(registry.WithCacheDir(""), registry.WithTransport(rec),
				registry.WithInsecureRegistries(tc.listed...),
				registry.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Steps: 1}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Resolve(ctx, tc.ref); err == nil {
				t.Fatal("resolved through a transport that answers nothing")
			}
			plain := rec.plain()
			if got := len(plain) > 0; got != tc.wantPlain {
				t.Errorf("plain-HTTP requests %q (all: %q), want some: %v", plain, rec.urls, tc.wantPlain)
			}
			if len(rec.urls) == 0 {
				t.Error("no request at all: the test checks nothing")
			}
		})
	}
}

// A loopback registry (plain HTTP allowed) that names a plain-HTTP token realm on another host
// does not get it fetched: the realm's host is neither loopback nor listed.
func TestPlainHTTPRealmRefused(t *testing.T) {
	rec := &recorder{answer: func(req *http.Request) *http.Response {
		if req.URL.Scheme == "https" {
			return nil // the registry has no TLS
		}
		if req.URL.Host == "127.0.0.1:5000" {
			h := http.Header{}
			h.Set("WWW-Authenticate", `Bearer realm="http://auth.example.com/token",service="registry"`)
			return &http.Response{StatusCode: http.StatusUnauthorized, Header: h, Body: io.NopCloser(strings.NewReader(""))}
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"token":"t"}`))}
	}}
	c, err := registry.New(registry.WithCacheDir(""), registry.WithTransport(rec),
		registry.WithKeychain(authn.NewMultiKeychain()),
		registry.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Steps: 1}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(context.Background(), "127.0.0.1:5000/app:v1")
	if err == nil || !strings.Contains(err.Error(), "refusing plain HTTP to auth.example.com") {
		t.Errorf("err = %v, want the realm refused", err)
	}
	for _, u := range rec.plain() {
		if !strings.HasPrefix(u, "http://127.0.0.1:5000/") {
			t.Errorf("plain-HTTP request to a host not allowed reached the transport: %s", u)
		}
	}
	if len(rec.urls) == 0 {
		t.Error("no request at all: the test checks nothing")
	}
}
