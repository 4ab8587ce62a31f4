package main

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JUnit a CI server reads agrees with polygraph's exit code: failures only when it exits
// 1, errors only when it exits 3.
func TestJUnitAgreesWithTheExitCode(t *testing.T) {
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"files":{"main.js":"/static/js/main.1.js"},"entrypoints":["static/js/main.1.js"]}`)
	}))
	defer live.Close()
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer cdn.Close()
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	addr := strings.TrimPrefix(live.URL, "http://")
	oneDead := write("one-dead.yaml", fmt.Sprintf("fleet:\n  static:\n    - {id: web-1, address: %q}\n    - {id: web-2, address: \"127.0.0.1:1\"}\nprobe:\n  retries: 0\ncdn:\n  base_urls: [%q]\n", addr, cdn.URL+"/"))
	allDead := write("all-dead.yaml", "fleet:\n  static:\n    - {id: gone, address: \"127.0.0.1:1\"}\nprobe:\n  retries: 0\n")
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		failed bool // failures > 0
		errors bool // errors > 0
	}{
		{"an instance unreachable", []string{"--config", oneDead}, 1, true, false},
		{"an instance unreachable, --fail-on never", []string{"--config", oneDead, "--fail-on", "never"}, 0, false, false},
		{"no instance answers", []string{"--config", allDead}, 3, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := polygraph(t, nil, append([]string{"verify", "--output", "junit", "--timeout", "20s"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s\n%s", code, tt.code, stderr, out)
			}
			var root struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Errors   int `xml:"errors,attr"`
				Skipped  int `xml:"skipped,attr"`
			}
			if err := xml.Unmarshal([]byte(out), &root); err != nil {
				t.Fatalf("stdout is not JUnit: %v\n%s", err, out)
			}
			if root.Tests == 0 || (root.Failures > 0) != tt.failed || (root.Errors > 0) != tt.errors {
				t.Errorf("tests %d failures %d errors %d skipped %d for exit %d:\n%s", root.Tests, root.Failures, root.Errors, root.Skipped, code, out)
			}
		})
	}
}
