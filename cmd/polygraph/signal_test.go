package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// slowWorld writes a config for a healthy fleet whose CDN answers each request after delay,
// and returns its path.
func slowWorld(t *testing.T, delay time.Duration) (string, *testkit.CDN) {
	t.Helper()
	b := testkit.CRABuild("store-web v1", 40, 4)
	cdn, err := testkit.StartCDN("/store/", b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)
	cdn.SetLatency(delay)
	f, err := testkit.StartFleet([]testkit.Spec{{Build: b}, {Build: b}}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	var y strings.Builder
	y.WriteString("fleet:\n  static:\n")
	for _, in := range f.Instances {
		fmt.Fprintf(&y, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&y, "probe:\n  timeout: 30s\ncdn:\n  base_urls: [%q]\n  concurrency: 2\n", cdn.URL)
	dir := t.TempDir()
	path := filepath.Join(dir, "polygraph.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, cdn
}

// TestSignalsStopTheRun: SIGINT or SIGTERM during the CDN phase stops the run within a second,
// writes the partial report (to stdout and --report) that never passes, counts the assets not
// checked as unchecked, and exits 130 or 143.
func TestSignalsStopTheRun(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			cfg, cdn := slowWorld(t, 2*time.Second)
			report := filepath.Join(t.TempDir(), "report.json")
			if err := os.WriteFile(report, []byte(`{"verdict": "pass"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary, "verify", "--config", cfg, "--output", "json", "--report", report, "--timeout", "60s")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the CDN phase is under way.
			for deadline := time.Now().Add(10 * time.Second); cdn.Requests.Load() == 0; {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the CDN was never asked")
				}
				time.Sleep(10 * time.Millisecond)
			}
			sent := time.Now()
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			took := time.Since(sent)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("exit %v, want %d; stderr: %s", err, c.code, errb.String())
			}
			if took > time.Second+slackCLI {
				t.Errorf("the run took %s to stop after the signal", took)
			}
			for name, b := range map[string][]byte{"stdout": out.Bytes(), "--report": mustRead(t, report)} {
				var rep model.Report
				if err := json.Unmarshal(b, &rep); err != nil {
					t.Fatalf("%s: %v: %q", name, err, b)
				}
				if rep.Verdict == model.VerdictPass || !strings.Contains(rep.Error, "interrupted by SIG") {
					t.Errorf("%s: verdict %s, error %q", name, rep.Verdict, rep.Error)
				}
				if rep.CDN.Checked == 0 || rep.CDN.Unchecked == 0 {
					t.Errorf("%s: cdn %+v, want assets not done counted as unchecked", name, rep.CDN)
				}
			}
		})
	}
}

// slackCLI allows for a loaded test machine when timing the binary.
const slackCLI = 300 * time.Millisecond

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSignalWhileResolvingTheRelease: a signal while the registry hangs stops the run within a
// second too, with the report written and the signal named.
func TestSignalWhileResolvingTheRelease(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and never answer
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "polygraph.yaml")
	write(t, cfg, "release:\n  image: "+l.Addr().String()+"/store-web:v1\nfleet:\n  static:\n    - {id: web-1, address: \"127.0.0.1:9\"}\n")
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(binary, "verify", "--config", cfg, "--output", "json", "--report", report, "--timeout", "60s")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if took := time.Since(sent); took > time.Second+slackCLI {
		t.Errorf("the run took %s to stop after the signal", took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit %v, want 143", err)
	}
	var rep model.Report
	if err := json.Unmarshal(mustRead(t, report), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != model.VerdictError || !strings.Contains(rep.Error, "interrupted by SIGTERM") {
		t.Errorf("verdict %s, error %q", rep.Verdict, rep.Error)
	}
}
