package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func TestReleaseRecord(t *testing.T) {
	srv := regtest.NewServer()
	defer srv.Close()
	ctx := context.Background()
	manifestJSON := []byte(`{"files":{"main.js":"/static/js/main.1.js","main.css":"/static/css/main.1.css"}}`)
	ref := srv.Ref("store-web:v1")
	pushed, err := regtest.PushIndex(ctx, ref, regtest.Index{Attestation: true, Images: []regtest.Image{
		{Platform: "linux/amd64", Layers: [][]regtest.File{{{Path: "/app/dist/asset-manifest.json", Data: manifestJSON}}}},
		{Platform: "linux/arm64", Layers: [][]regtest.File{{{Path: "/app/dist/asset-manifest.json", Data: manifestJSON}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "polygraph.yaml")
	cfg := "release:\n  image: " + ref + "\n  manifest_file: /app/dist/asset-manifest.json\n  platform: linux/arm64\n" +
		"fleet:\n  static:\n    - {id: web-1, address: 127.0.0.1:8080}\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := []string{"--cache-dir", filepath.Join(dir, "cache")}

	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   string // substring of stderr
		out      string // file the record is written to, "" for stdout
		platform string
	}{
		{name: "stdout", args: []string{"--image", ref, "--manifest-file", "/app/dist/asset-manifest.json"}, platform: "linux/amd64"},
		{name: "out file", args: []string{"--image", ref, "--manifest-file", "/app/dist/asset-manifest.json", "--platform", "linux/arm64", "--out", filepath.Join(dir, "release.json")}, out: filepath.Join(dir, "release.json"), platform: "linux/arm64"},
		{name: "config defaults", args: []string{"--config", cfgPath, "-q"}, platform: "linux/arm64"},
		{name: "no image", args: []string{"--manifest-file", "/a.json"}, code: 2, stderr: "no image"},
		{name: "no manifest file", args: []string{"--image", ref}, code: 2, stderr: "no manifest file"},
		{name: "relative manifest file", args: []string{"--image", ref, "--manifest-file", "a.json"}, code: 2, stderr: "absolute path"},
		{name: "bad reference", args: []string{"--image", "Bad Ref", "--manifest-file", "/a.json"}, code: 2, stderr: "invalid reference"},
		{name: "bad platform", args: []string{"--image", ref, "--manifest-file", "/a.json", "--platform", "amd64"}, code: 2, stderr: "os/arch"},
		{name: "registry down", args: []string{"--image", down + "/app:v1", "--manifest-file", "/a.json"}, code: 3, stderr: "unreachable"},
		{name: "missing image", args: []string{"--image", srv.Ref("nope:v1"), "--manifest-file", "/a.json"}, code: 3, stderr: "not found in the registry"},
		{name: "missing file", args: []string{"--image", ref, "--manifest-file", "/a.json"}, code: 3, stderr: `file "/a.json" not found in image`},
		{name: "missing platform", args: []string{"--image", ref, "--manifest-file", "/a.json", "--platform", "linux/s390x"}, code: 3, stderr: "has no platform linux/s390x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"polygraph", "release", "record"}, append(tt.args, cache...)...)
			code := runCLI(ctx, args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
			if tt.code != 0 {
				return
			}
			b := stdout.Bytes()
			if tt.out != "" {
				var err error
				if b, err = os.ReadFile(tt.out); err != nil {
					t.Fatal(err)
				}
			}
			var rec model.ReleaseRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("record: %v in %q", err, b)
			}
			if rec.Schema != model.RecordSchema || rec.Image != ref || rec.Digest != pushed.Digest ||
				rec.Platform != tt.platform || rec.Assets != 2 || rec.ManifestFile != "/app/dist/asset-manifest.json" ||
				len(rec.Digests) != 5 || rec.ManifestSHA256 == "" || rec.AssetsSHA256 == "" || rec.RecordedAt.IsZero() {
				t.Errorf("record = %+v", rec)
			}
		})
	}
}
