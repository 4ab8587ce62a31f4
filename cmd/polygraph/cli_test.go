package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "polygraph-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "polygraph")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("building polygraph: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// polygraph runs the real binary and returns stdout, stderr and the exit code.
func polygraph(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return execIn(t, "", env, args...)
}

// execIn runs the real binary in dir ("" for the test's own) with extra environment.
func execIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("probe:\n  timout: 5s\n"), 0o644)
	dead := filepath.Join(dir, "dead.yaml")
	os.WriteFile(dead, []byte("fleet:\n  static:\n    - {id: gone, address: \"127.0.0.1:1\"}\nprobe:\n  retries: 0\n"), 0o644)
	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{"version", nil, []string{"version"}, 0, ""},
		{"unknown command", nil, []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"verify", "--frob"}, 2, "flag provided but not defined"},
		{"no config", nil, []string{"verify"}, 2, "no configuration"},
		{"config error names file and line", nil, []string{"verify", "--config", bad}, 2, bad + `:2: unknown key "timout" in probe`},
		{"config from the environment", []string{"POLYGRAPH_CONFIG=" + bad}, []string{"verify"}, 2, bad + ":2:"},
		{"bad --output", nil, []string{"verify", "--config", bad, "--output", "yaml"}, 2, "--output must be one of"},
		{"bad --fail-on", nil, []string{"verify", "--fail-on", "sometimes"}, 2, "--fail-on must be"},
		{"nothing answers", nil, []string{"verify", "--config", dead, "--timeout", "20s"}, 3, "not a single instance answered"},
		{"flags after the command, timeout respected", nil, []string{"verify", "--config", dead, "--timeout", "1ms"}, 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := polygraph(t, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
		})
	}
}

func TestDemo(t *testing.T) {
	out, stderr, code := polygraph(t, nil, "demo")
	if code != 0 {
		t.Fatalf("demo exited %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{"FAIL", "version-lie", "asset-missing", "web-5 and web-6 claim v2.31.0", "tag-moved", "(per docker)", "container runtime",
		"$ polygraph diagnose", "1. tag-re-pushed (group 2)", "after the release was recorded at 2021-04-06 08:50 UTC", "Next steps"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes in output that is not a terminal")
	}
}

// TestServeThenVerify runs the world with `demo --serve` and points the real `verify` at the
// config it writes, as a user would.
func TestServeThenVerify(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "demo", "--serve", "--dir", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	ready := make(chan bool)
	pageURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "The diagnosis of the incident: "); ok {
				pageURL <- strings.Fields(rest)[0]
			}
			if strings.Contains(sc.Text(), "polygraph verify --config") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("demo --serve did not become ready")
	}
	// demo --serve serves the HTML diagnosis on loopback and writes it beside the config.
	resp, err := http.Get(<-pageURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	saved, _ := os.ReadFile(filepath.Join(dir, "diagnosis.html"))
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`<svg id="fleet-picture"`)) || !bytes.Equal(page, saved) {
		t.Errorf("served diagnosis: status %d, %d bytes, same as diagnosis.html: %v", resp.StatusCode, len(page), bytes.Equal(page, saved))
	}
	cfg := filepath.Join(dir, "polygraph.yaml")
	if _, err := config.Load(cfg); err != nil {
		t.Fatalf("the config demo --serve wrote does not load: %v", err)
	}
	reportFile := filepath.Join(dir, "report.json")
	out, stderr, code := polygraph(t, nil, "verify", "--config", cfg, "--output", "json", "--report", reportFile)
	if code != 1 {
		t.Fatalf("verify exited %d, want 1: %s", code, stderr)
	}
	var rep model.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v", err)
	}
	saved, _ = os.ReadFile(reportFile)
	var rep2 model.Report
	if err := json.Unmarshal(saved, &rep2); err != nil || rep2.Summary != rep.Summary {
		t.Errorf("--report differs from stdout: %v", err)
	}
	var liars []string
	for _, f := range rep.Findings {
		if f.Kind == model.KindVersionLie {
			liars = append(liars, f.Instance)
		}
	}
	if rep.Schema != model.ReportSchema || rep.Verdict != "fail" || !slices.Equal(liars, []string{"web-5", "web-6"}) {
		t.Errorf("schema %s verdict %s liars %v", rep.Schema, rep.Verdict, liars)
	}
	for _, format := range []string{"junit", "markdown", "text"} {
		out, _, code := polygraph(t, []string{"POLYGRAPH_OUTPUT=" + format}, "verify", "--config", cfg)
		if code != 1 || !strings.Contains(out, "web-5") {
			t.Errorf("--output %s: exit %d, output %q", format, code, out)
		}
	}
	if _, _, code := polygraph(t, nil, "verify", "--config", cfg, "--fail-on", "never", "--quiet"); code != 0 {
		t.Errorf("--fail-on never exited %d", code)
	}
}

// Every example config must load.
func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*/polygraph.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// A setting the config accepts where it has no effect is said on stderr, with its line.
func TestConfigWarningsAreLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.yaml")
	doc := "fleet:\n  static:\n    - {id: a, address: \"127.0.9.9:1\"}\nprobe:\n  digest:\n    source: header\n    header: X-D\n    container: web\n  timeout: 1s\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := polygraph(t, nil, "verify", "--config", path, "--timeout", "3s")
	if code != 3 || !strings.Contains(stderr, path+":8: probe.digest.container is read only when probe.digest.source is ssm or docker") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
