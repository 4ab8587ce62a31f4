package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// TestRegistryDownWritesTheReport: a run that cannot resolve its release (registry down) exits
// 3 and still renders its report to stdout, in every output format, and replaces a stale
// --report from an earlier run with this run's, verdict "error" and the reason.
func TestRegistryDownWritesTheReport(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "polygraph.yaml")
	write(t, cfg, "release:\n  image: "+down+"/store-web:v1\nfleet:\n  static:\n    - {id: web-1, address: \"127.0.0.1:9\"}\n")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	for _, output := range []string{"json", "text", "markdown", "junit"} {
		t.Run(output, func(t *testing.T) {
			report := filepath.Join(dir, "report-"+output+".json")
			write(t, report, `{"schema": "polygraph.report/v1", "verdict": "pass"}`)
			stdout, stderr, code := polygraph(t, env, "verify", "--config", cfg, "--output", output, "--report", report, "--timeout", "10s")
			if code != 3 {
				t.Fatalf("exit %d, want 3; stderr: %s", code, stderr)
			}
			if strings.TrimSpace(stdout) == "" {
				t.Fatal("nothing on stdout")
			}
			if !strings.Contains(stderr, down) {
				t.Errorf("stderr %q does not name the registry", stderr)
			}
			var rep model.Report
			if err := json.Unmarshal(mustRead(t, report), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != model.VerdictError || rep.Error == "" || rep.StartedAt.IsZero() {
				t.Errorf("--report = %+v, want this run's, verdict error", rep)
			}
			if output == "json" {
				var out model.Report
				if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Verdict != model.VerdictError {
					t.Errorf("stdout report %q: %v", stdout, err)
				}
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".report-*"))
			if len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "report-json.json")); err != nil {
		t.Fatal(err)
	}
}
