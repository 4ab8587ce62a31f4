package registry_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/polygraph-dev/polygraph/registry"
)

// ecrFake serves GetAuthorizationToken (JSON 1.1) of ECR and of ECR Public on 127.0.0.1: a
// token when allow, else the AccessDeniedException IAM gives. It counts the calls.
type ecrFake struct {
	allow atomic.Bool
	calls atomic.Int32

	mu      sync.Mutex
	token   string
	expires time.Duration // from now; negative answers with tokens already expired
}

// set changes the token the fake hands out and how long it is valid for.
func (f *ecrFake) set(token string, expires time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token, f.expires = token, expires
}

func (f *ecrFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetAuthorizationToken") {
		http.Error(w, "unexpected call", http.StatusBadRequest)
		return
	}
	f.calls.Add(1)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if !f.allow.Load() {
		w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/ci is not authorized to perform: ecr:GetAuthorizationToken"}`)
		return
	}
	f.mu.Lock()
	token := base64.StdEncoding.EncodeToString([]byte("AWS:" + f.token))
	expires := time.Now().Add(f.expires).Unix()
	f.mu.Unlock()
	if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "SpencerFrontendService.") { // ECR Public
		fmt.Fprintf(w, `{"authorizationData":{"authorizationToken":%q,"expiresAt":%d}}`, token, expires)
		return
	}
	fmt.Fprintf(w, `{"authorizationData":[{"authorizationToken":%q,"expiresAt":%d,"proxyEndpoint":"https://123456789012.dkr.ecr.us-east-1.amazonaws.com"}]}`, token, expires)
}

// fakeECR starts an ecrFake for both services, with static AWS credentials and the token
// cache turned off; a test turns it on with AWS_ECR_CACHE_DIR.
func fakeECR(t *testing.T, allow bool) *ecrFake {
	t.Helper()
	f := &ecrFake{expires: time.Hour, token: "secret-token"}
	f.allow.Store(allow)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_ECR":        srv.URL,
		"AWS_ENDPOINT_URL_ECR_PUBLIC": srv.URL,
		"AWS_ACCESS_KEY_ID":           "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ECR_DISABLE_CACHE":       "true",
	} {
		t.Setenv(k, v)
	}
	return f
}

// password resolves repo through the ECR keychain and returns the password it authenticates
// with.
func password(t *testing.T, repo name.Repository) string {
	t.Helper()
	a, err := registry.ECRKeychain().Resolve(repo)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Password
}

func TestECRKeychain(t *testing.T) {
	ecrRepo, err := name.NewRepository("123456789012.dkr.ecr.us-east-1.amazonaws.com/store-web")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("token", func(t *testing.T) {
		fakeECR(t, true)
		a, err := registry.ECRKeychain().Resolve(ecrRepo)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != "AWS" || cfg.Password != "secret-token" {
			t.Errorf("auth = %+v", cfg)
		}
	})
	t.Run("IAM denies", func(t *testing.T) {
		fakeECR(t, false)
		_, err := registry.ECRKeychain().Resolve(ecrRepo)
		var ae *registry.AuthError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "ecr:GetAuthorizationToken") {
			t.Errorf("err = %v, want *AuthError naming the permission", err)
		}
		if testing.Verbose() {
			t.Log(err)
		}
	})
	t.Run("tokens shared through the credential helper's cache", func(t *testing.T) {
		f := fakeECR(t, true)
		os.Unsetenv("AWS_ECR_DISABLE_CACHE")
		dir := t.TempDir()
		t.Setenv("AWS_ECR_CACHE_DIR", dir)
		if got := password(t, ecrRepo); got != "secret-token" {
			t.Fatalf("first resolve: password %q", got)
		}
		f.set("second-token", time.Hour)
		if got := password(t, ecrRepo); got != "secret-token" || f.calls.Load() != 1 {
			t.Errorf("second resolve: password %q after %d calls; want the cached token after 1", got, f.calls.Load())
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cache.json")); err != nil || !strings.Contains(string(b), "123456789012") {
			t.Errorf("cache file: %v\n%s", err, b)
		}
	})
	t.Run("an expired cached token when ECR fails", func(t *testing.T) {
		f := fakeECR(t, true)
		os.Unsetenv("AWS_ECR_DISABLE_CACHE")
		t.Setenv("AWS_ECR_CACHE_DIR", t.TempDir())
		f.set("secret-token", -time.Minute)
		if got := password(t, ecrRepo); got != "secret-token" {
			t.Fatalf("first resolve: password %q", got)
		}
		f.set("fresh-token", -time.Minute)
		if got := password(t, ecrRepo); got != "fresh-token" || f.calls.Load() != 2 {
			t.Fatalf("expired token: password %q after %d calls; want a fresh token from a second call", got, f.calls.Load())
		}
		f.allow.Store(false)
		if got := password(t, ecrRepo); got != "fresh-token" || f.calls.Load() != 3 {
			t.Errorf("ECR failing: password %q after %d calls; want the expired cached token after asking", got, f.calls.Load())
		}
	})
	t.Run("ECR Public", func(t *testing.T) {
		public, err := name.NewRepository("public.ecr.aws/acme/store-web")
		if err != nil {
			t.Fatal(err)
		}
		f := fakeECR(t, true)
		if got := password(t, public); got != "secret-token" || f.calls.Load() != 1 {
			t.Errorf("password %q after %d calls", got, f.calls.Load())
		}
		f.allow.Store(false)
		if a, err := registry.ECRKeychain().Resolve(public); err != nil || a != authn.Anonymous {
			t.Errorf("refused: Resolve = %v, %v; want Anonymous", a, err)
		}
	})
	t.Run("other registries are anonymous", func(t *testing.T) {
		repo, _ := name.NewRepository("127.0.0.1:5000/app")
		a, err := registry.ECRKeychain().Resolve(repo)
		if err != nil || a != authn.Anonymous {
			t.Errorf("Resolve = %v, %v; want Anonymous", a, err)
		}
	})
}
