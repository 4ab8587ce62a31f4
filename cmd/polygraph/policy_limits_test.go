//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Inputs polygraph cannot or must not read are exit 2 naming the file; hostile content is a
// finding; signals and --timeout end policy check.
func TestPolicyCheckHostileInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var doubling strings.Builder
	doubling.WriteString("ARG A0=xxxxxxxx\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&doubling, "ARG A%d=%s\n", i, strings.Repeat(fmt.Sprintf("$A%d", i-1), 8))
	}
	doubling.WriteString("FROM alpine:$A9\n")
	dockerfile := write("doubling/Dockerfile", doubling.String())
	var chain strings.Builder
	chain.WriteString("x-b0: &b0\n  image: nginx:latest\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&chain, "x-b%d: &b%d\n  <<: *b%d\n", i, i, i-1)
	}
	chain.WriteString("services:\n  web:\n    <<: *b9\n")
	compose := write("chain/compose.yaml", chain.String())
	write("tree/deploy/ok.yaml", "services:\n  a:\n    image: nginx@sha256:"+strings.Repeat("c", 64)+"\n")
	write("tree/testdata/bad.yaml", "services:\n  a:\n    image: nginx:latest\n")
	write("tree/examples/x.bad.yaml", "services:\n  a:\n    image: nginx:latest\n")
	excludeCfg := write("exclude.yaml", "policy:\n  exclude: [\"testdata/**\"]\n")

	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"config is a device", []string{"--config", "/dev/zero", compose}, 2, "", `/dev/zero: reading config: not a regular file (a device)`},
		{"config is a FIFO", []string{"--config", fifo, compose}, 2, "", fifo + ": reading config: not a regular file (a named pipe)"},
		{"input is a FIFO", []string{fifo}, 2, "", `reading "` + fifo + `": not a regular file (a named pipe)`},
		{"input is a device", []string{"/dev/zero"}, 2, "", `reading "/dev/zero": not a regular file (a device)`},
		{"ARG doubling is unreadable", []string{dockerfile}, 1, "Dockerfile:11:6: error unreadable: cannot read image \"alpine:$A9\" in FROM of stage 1: variable expansion produces more than 1024 KiB (line 7)", ""},
		{"merge chain 10 deep is read", []string{compose}, 1, "compose.yaml:2:10: error latest-tag", ""},
		{"skip-path", []string{"--skip-path", "testdata/**", "--skip-path", "*.bad.yaml", filepath.Join(dir, "tree")}, 0, "policy pass: 0 findings in 1 image reference across 1 file, 2 files skipped", ""},
		{"policy.exclude", []string{"--config", excludeCfg, filepath.Join(dir, "tree")}, 1, ", 1 file skipped", ""},
		{"bad skip-path", []string{"--skip-path", "[x", compose}, 2, "", `invalid exclude glob "[x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := polygraph(t, []string{"POLYGRAPH_CONFIG="}, append([]string{"policy", "check"}, tt.args...)...)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout %q lacks %q", stdout, tt.wantStdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr, tt.wantStderr)
			}
		})
	}

	t.Run("json summary counts skipped files", func(t *testing.T) {
		stdout, stderr, code := polygraph(t, []string{"POLYGRAPH_CONFIG="}, "policy", "check", "-o", "json", "--skip-path", "testdata/**", filepath.Join(dir, "tree"))
		var r struct {
			Summary struct {
				Files, Images int
				Skipped       []string
				SkippedFiles  []struct{ File, Reason string } `json:"skipped_files"`
			}
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("exit %d: %v\n%s\n%s", code, err, stdout, stderr)
		}
		if len(r.Summary.Skipped) != 1 || len(r.Summary.SkippedFiles) != 1 || r.Summary.SkippedFiles[0].Reason != "excluded by testdata/**" {
			t.Errorf("summary %+v", r.Summary)
		}
	})
}

// SIGINT and SIGTERM end policy check at once with 130 and 143, even while it waits for input;
// --timeout ends it with 3.
func TestPolicyCheckSignalsAndTimeout(t *testing.T) {
	tests := []struct {
		name   string
		sig    syscall.Signal
		args   []string
		code   int
		stderr string
	}{
		{"SIGINT", syscall.SIGINT, nil, 130, "interrupted by SIGINT"},
		{"SIGTERM", syscall.SIGTERM, nil, 143, "interrupted by SIGTERM"},
		{"timeout", 0, []string{"--timeout", "300ms"}, 3, "--timeout 300ms reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"policy", "check", "--log-level", "debug"}, append(tt.args, "-")...)...)
			cmd.Env = append(os.Environ(), "POLYGRAPH_CONFIG=")
			stdin, err := cmd.StdinPipe() // left open: policy check waits for its input
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			var stderr syncBuilder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			if tt.sig != 0 {
				// The handler is installed before the command runs; wait for the command to say
				// it is reading, so the signal never arrives before the handler on a busy machine.
				for !strings.Contains(stderr.String(), "reading deploy configurations") {
					select {
					case <-done:
						t.Fatalf("ended before reading: %s", stderr.String())
					case <-time.After(10 * time.Millisecond):
					}
				}
				if err := cmd.Process.Signal(tt.sig); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatal("policy check did not end")
			}
			if d := time.Since(start); tt.sig != 0 && d > time.Second {
				t.Errorf("ended %s after the signal, want within 1s", d)
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// The exit code after a signal is the signal's, whatever the command made of its cancelled
// context, for every command.
func TestSignalExitCode(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&SignalError{Signal: sig})
		var out, errb strings.Builder
		code := runCLI(ctx, []string{"polygraph", "policy", "check", "-"}, strings.NewReader("FROM alpine\n"), &out, &errb)
		if code != want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", sig, code, want, errb.String())
		}
	}
}

// syncBuilder is a strings.Builder safe to read while a process writes to it.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
