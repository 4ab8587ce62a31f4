package registry_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/polygraph-dev/polygraph/registry"
)

// fakeECR serves GetAuthorizationToken (JSON 1.1) on 127.0.0.1: a token when allow, else the
// AccessDeniedException IAM gives.
func fakeECR(t *testing.T, allow bool) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetAuthorizationToken") {
			http.Error(w, "unexpected call", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !allow {
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/ci is not authorized to perform: ecr:GetAuthorizationToken"}`)
			return
		}
		token := base64.StdEncoding.EncodeToString([]byte("AWS:secret-token"))
		fmt.Fprintf(w, `{"authorizationData":[{"authorizationToken":%q,"expiresAt":%d,"proxyEndpoint":"https://123456789012.dkr.ecr.us-east-1.amazonaws.com"}]}`,
			token, time.Now().Add(time.Hour).Unix())
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_ECR":        srv.URL,
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
	t.Run("other registries are anonymous", func(t *testing.T) {
		repo, _ := name.NewRepository("127.0.0.1:5000/app")
		a, err := registry.ECRKeychain().Resolve(repo)
		if err != nil || a != authn.Anonymous {
			t.Errorf("Resolve = %v, %v; want Anonymous", a, err)
		}
	})
}
