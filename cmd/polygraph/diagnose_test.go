package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// The real binary diagnoses the incident over a static fleet (no launch times) in each output
// format, with verify's exit code.
func TestDiagnoseCommand(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	path, err := w.WriteConfig(dir, w.Record)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "NO_COLOR=1"}

	out, errOut, code := polygraph(t, env, "diagnose", "--config", path)
	if code != 1 {
		t.Fatalf("text: exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{
		"polygraph diagnose: FAIL", "2 of 6 instances serve other content than the release",
		"✗ group 2  2 instances   web-5, web-6", "1. tag-re-pushed (group 2)",
		"not enough evidence: launch times are unknown", "Since when\n  unknown: the fleet source gives no launch times", "Next steps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 45 {
		t.Errorf("text output is %d lines, more than a screen", n)
	}

	report := filepath.Join(dir, "diagnosis.json")
	out, errOut, code = polygraph(t, env, "diagnose", "--config", path, "--output", "json", "--report", report)
	if code != 1 {
		t.Fatalf("json: exit %d, stderr %s", code, errOut)
	}
	var d model.Diagnosis
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Schema != model.DiagnosisSchema || d.Report == nil || d.Report.Schema != model.ReportSchema || len(d.Groups) != 2 || d.Causes[0].Kind != model.CauseTagRePushed {
		t.Errorf("json diagnosis: schema %q, groups %d, causes %+v", d.Schema, len(d.Groups), d.Causes)
	}
	if b, err := os.ReadFile(report); err != nil || string(b) != out {
		t.Errorf("--report holds other bytes than stdout (%v)", err)
	}

	out, _, code = polygraph(t, env, "diagnose", "--config", path, "--output", "html")
	if code != 1 || !strings.HasPrefix(out, "<!doctype html>") || !strings.Contains(out, `<svg id="fleet-picture"`) || strings.Contains(out, "<script") {
		t.Errorf("html: exit %d, %d bytes", code, len(out))
	}

	if _, errOut, code = polygraph(t, env, "diagnose", "--config", path, "--output", "junit"); code != 2 || !strings.Contains(errOut, "--output must be one of text, json, html") {
		t.Errorf("bad --output: exit %d, %s", code, errOut)
	}
	if _, _, code = polygraph(t, env, "diagnose", "--config", path, "--fail-on", "never"); code != 0 {
		t.Errorf("--fail-on never: exit %d", code)
	}
}

// A run that could not verify at all still prints its diagnosis (verdict error) and exits 3.
func TestDiagnoseUnverifiable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dead.yaml")
	os.WriteFile(cfg, []byte("fleet:\n  static:\n    - {id: gone, address: \"127.0.0.1:1\"}\nprobe:\n  retries: 0\n"), 0o644)
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}
	out, errOut, code := polygraph(t, env, "diagnose", "--config", cfg)
	if code != 3 || !strings.Contains(out, "polygraph diagnose: ERROR") || !strings.Contains(out, "Could not verify at all") {
		t.Errorf("text: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = polygraph(t, env, "diagnose", "--config", cfg, "--output", "json")
	var d model.Diagnosis
	if err := json.Unmarshal([]byte(out), &d); code != 3 || err != nil || d.Verdict != model.VerdictError || len(d.Groups) != 0 {
		t.Errorf("json: exit %d, %v, %+v", code, err, d)
	}
}
