//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// TestConcurrencyFitsTheFDLimit runs the binary under a file descriptor limit (soft and hard)
// far below probe.concurrency + cdn.concurrency: it sizes its concurrency to the limit and
// verifies the whole fleet, instead of blaming instances for EMFILE.
func TestConcurrencyFitsTheFDLimit(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	b := testkit.CRABuild("store-web v1", 60, 4)
	cdn, err := testkit.StartCDN("/store/", b)
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	cdn.SetLatency(5 * time.Millisecond) // requests overlap
	specs := make([]testkit.Spec, 150)
	for i := range specs {
		specs[i].Build = b
	}
	f, err := testkit.StartFleet(specs, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var y strings.Builder
	y.WriteString("fleet:\n  static:\n")
	for _, in := range f.Instances {
		fmt.Fprintf(&y, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&y, "probe:\n  concurrency: 128\n  retries: 0\ncdn:\n  base_urls: [%q]\n  concurrency: 64\n", cdn.URL)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "polygraph.yaml")
	if err := os.WriteFile(cfg, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, binary, "verify", "--config", cfg, "--output", "json")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var rep model.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("%v: %v: %s", err, jerr, out)
	}
	if err != nil || rep.Verdict != model.VerdictPass || rep.Summary.OK != len(specs) || rep.CDN.Checked != len(b.Assets) {
		t.Fatalf("exit %v, verdict %s, error %q, summary %+v, cdn %+v, first findings %v", err, rep.Verdict, rep.Error, rep.Summary, rep.CDN, first(rep.Findings, 3))
	}
}

func first(fs []model.Finding, n int) []model.Finding {
	return fs[:min(n, len(fs))]
}
