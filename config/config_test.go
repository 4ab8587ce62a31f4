package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the .want files of testdata/invalid")

// Every file in testdata/invalid is one invalid config; its .want file holds the exact error.
func TestInvalidConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid cases: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error", f)
			}
			wantFile := strings.TrimSuffix(f, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(wantFile, []byte(err.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(wantFile)
			if rerr != nil {
				t.Fatalf("missing %s (run with -update): %v", wantFile, rerr)
			}
			if got := err.Error(); got != strings.TrimSpace(string(want)) {
				t.Errorf("error:\n got: %s\nwant: %s", got, strings.TrimSpace(string(want)))
			}
			if !strings.HasPrefix(err.Error(), f+":") {
				t.Errorf("error %q does not name the file %s", err, f)
			}
		})
	}
}

func TestDefaultsAndRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "polygraph.yaml")
	doc := "release:\n  image: registry.example.com/store-web:v2.31.0\n  record: release.json\nprobe:\n  tls: {ca_file: ca.pem}\nfleet:\n  static:\n    - {address: \"127.0.1.1:8080\"}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"version from tag", c.Release.Version, "v2.31.0"},
		{"record relative to config", c.Release.Record, filepath.Join(dir, "release.json")},
		{"ca_file relative to config", c.Probe.TLS.CAFile, filepath.Join(dir, "ca.pem")},
		{"platform", c.Release.Platform, "linux/amd64"},
		{"scheme", c.Probe.Scheme, "http"},
		{"manifest path", c.Probe.Manifest.Path, "/asset-manifest.json"},
		{"format", c.Probe.Manifest.Format, "auto"},
		{"concurrency", c.Probe.Concurrency, 64},
		{"timeout", c.Probe.Timeout.D(), 5 * time.Second},
		{"retries", *c.Probe.Retries, 3},
		{"retry budget", *c.Probe.RetryBudget, 0.2},
		{"expiry warning", c.Probe.TLS.ExpiryWarning.D(), 336 * time.Hour},
		{"cdn concurrency", c.CDN.Concurrency, 32},
		{"check replicas", *c.CDN.CheckReplicas, true},
		{"compare", c.Compare, "assets"},
		{"hook ready timeout", c.Hook.ReadyTimeout.D(), 10 * time.Minute},
		{"require digest", *c.Policy.RequireDigest, true},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestTagOf(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example.com/store-web:v2.31.0":        "v2.31.0",
		"registry.example.com:5000/store-web":           "",
		"registry.example.com:5000/store-web:v1":        "v1",
		"store-web@sha256:abc":                          "",
		"registry.example.com/store-web:v1@sha256:abcd": "",
	} {
		if got := tagOf(in); got != want {
			t.Errorf("tagOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpecExampleParses(t *testing.T) {
	// The full example of SPEC §3 must load (cloud sources included; they are validated here
	// even where a build cannot run them yet).
	doc := `release:
  image: registry.example.com/store-web:v2.31.0
  version: v2.31.0
  platform: linux/amd64
  manifest_file: /app/dist/asset-manifest.json
fleet:
  static:
    - {id: web-1, address: 10.0.1.5:8080, labels: {az: us-east-1a}}
  ec2:
    region: us-east-1
    auto_scaling_groups: [store-web-prod]
    filters: {"tag:Service": [store-web]}
    address: private_ip
    port: 8080
  target_groups: [arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/abc]
probe:
  scheme: http
  host: store.example.com
  manifest:
    path: /asset-manifest.json
    format: auto
    asset_prefix: ""
  version:
    path: /version
    pointer: /version
  digest:
    source: http
    path: /_meta
    pointer: /image/digest
    container: web
  concurrency: 64
  timeout: 5s
  retries: 3
  retry_budget: 0.2
  tls: {ca_file: "", insecure_skip_verify: false, expiry_warning: 336h}
cdn:
  base_urls:
    - https://cdn.example.com/store/
    - https://cdn-failover.example.com/store/
  concurrency: 32
  rate: 0
  check_replicas: true
  verify_integrity: false
  check_source_maps: false
compare: assets
hook:
  ready_timeout: 10m
  heartbeat_interval: 60s
  expect: release
  on_error: abandon
policy:
  require_digest: true
  allowed_registries: []
  exceptions:
    - {image: "docker.io/library/busybox:*", reason: "test fixture", expires: 2027-01-01}
`
	c, err := Parse([]byte(doc), "spec.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wantLine := 1 + strings.Count(doc[:strings.Index(doc, "- {image:")], "\n")
	if len(c.CDN.BaseURLs) != 2 || c.Fleet.EC2.Port != 8080 || c.Policy.Exceptions[0].Line != wantLine {
		t.Errorf("decoded %+v %+v line %d", c.CDN, c.Fleet.EC2, c.Policy.Exceptions[0].Line)
	}
	// The example sets probe.digest.container beside source http, where nothing reads it:
	// accepted, as the SPEC shows it, and said.
	containerLine := 1 + strings.Count(doc[:strings.Index(doc, "container: web")], "\n")
	want := []string{fmt.Sprintf(`spec.yaml:%d: probe.digest.container is read only when probe.digest.source is ssm or docker (it is "http"): it has no effect`, containerLine)}
	if !slices.Equal(c.Warnings, want) {
		t.Errorf("warnings %q, want %q", c.Warnings, want)
	}
}

// Settings read only by another digest source are warned about where they are set; used as
// their source reads them, they are not.
func TestDigestSettingsOfAnotherSourceWarn(t *testing.T) {
	ec2 := "fleet:\n  ec2: {region: us-east-1, auto_scaling_groups: [web], port: 8080}\n"
	tests := []struct{ doc, want string }{
		{"probe:\n  digest:\n    source: header\n    header: X-Digest\n    tag: image-digest\n",
			`c.yaml:5: probe.digest.tag is read only when probe.digest.source is ec2-tag (it is "header"): it has no effect`},
		{ec2 + "probe:\n  digest:\n    source: ec2-tag\n    tag: img\n", ""},
		{ec2 + "probe:\n  digest:\n    source: ssm\n    container: web\n", ""},
	}
	for _, tc := range tests {
		c, err := Parse([]byte(tc.doc), "c.yaml", t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if got := strings.Join(c.Warnings, "\n"); got != tc.want {
			t.Errorf("%s: warnings %q, want %q", tc.doc, got, tc.want)
		}
	}
}

// A config path that is no regular file, or one over the cap, is refused before it is read.
func TestLoadRefusesUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: reading config: not a regular file (a device)"},
		{dir, dir + ": reading config: not a regular file (a directory)"},
		{big, big + ": reading config: file too large (4.0 MiB, over the limit of 4 MiB)"},
		{filepath.Join(dir, "nope.yaml"), filepath.Join(dir, "nope.yaml") + ": reading config: no such file or directory"},
	}
	for _, tc := range tests {
		_, err := Load(tc.path)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Load(%s) = %v, want %s", tc.path, err, tc.want)
		}
	}
}

// release.manifest_file is one path or a list, one per probe.manifest.paths entry.
func TestManifestFileForms(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Files
	}{
		{"string", "release:\n  manifest_file: /app/m.json\n", Files{"/app/m.json"}},
		{"empty string", "release:\n  manifest_file: \"\"\n", nil},
		{"null", "release:\n  manifest_file:\n", nil},
		{"one-entry list", "release:\n  manifest_file: [/app/m.json]\n", Files{"/app/m.json"}},
		{"string with one path", "release:\n  manifest_file: /app/m.json\nprobe:\n  manifest:\n    paths: [/m.json]\n", Files{"/app/m.json"}},
		{"list per path", "release:\n  manifest_file:\n    - /app/a.json\n    - /app/b.json\nprobe:\n  manifest:\n    paths: [/a.json, /b.json]\n", Files{"/app/a.json", "/app/b.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc), "polygraph.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Release.ManifestFiles, tc.want) {
				t.Errorf("manifest files %q, want %q", c.Release.ManifestFiles, tc.want)
			}
		})
	}
}
