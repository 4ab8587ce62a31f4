package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPolicyCheckResolve runs `policy check --resolve` against an in-process registry on
// loopback: the suggestion is the digest the tag points at.
func TestPolicyCheckResolve(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(32, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/shop/web:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	file := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(file, []byte("services:\n  web:\n    image: "+host+"/shop/web:v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POLYGRAPH_CONFIG", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), []string{"polygraph", "policy", "check", "--resolve", file}, nil, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	if want := "fix: " + host + "/shop/web:v1@" + d.String(); !strings.Contains(stdout.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, stdout.String())
	}
}
