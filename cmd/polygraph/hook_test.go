package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

func launchWorld(t *testing.T, specs []testkit.Spec, hookYAML string) (*testkit.LaunchWorld, string) {
	t.Helper()
	w, err := testkit.StartLaunchWorld(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	path, err := w.WriteConfig(t.TempDir(), hookYAML)
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}

func TestHookCommand(t *testing.T) {
	w, cfg := launchWorld(t, []testkit.Spec{{ID: "i-good"}, {ID: "i-bad"}}, "heartbeat_interval: 1s\nready_timeout: 5s")
	w.Fleet.Instance("i-bad").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(w.Launch("i-good", "tok-good", time.Minute)), 0o644)
	env := append(w.Env(), "POLYGRAPH_CONFIG="+cfg)

	stdout, stderr, code := polygraph(t, env, "hook", "--event", good)
	var rep model.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || rep.Verdict != model.VerdictPass {
		t.Fatalf("good launch: exit %d, verdict %q (%v); stderr %s", code, rep.Verdict, err, stderr)
	}
	if act, _ := w.AWS.AutoScaling().Action("tok-good"); act.Result != "CONTINUE" {
		t.Fatalf("good launch: action %+v", act)
	}

	// The bad launch arrives as an EventBridge event on stdin; the report also goes to --report.
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(binary, "hook", "--event", "-", "--report", report)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(testkit.EventBridge(w.Launch("i-bad", "tok-bad", time.Minute)))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(errb.String(), "ABANDON") {
		t.Fatalf("bad launch: exit %d, stderr %s", code, errb.String())
	}
	if act, _ := w.AWS.AutoScaling().Action("tok-bad"); act.Result != "ABANDON" || act.Completions != 1 {
		t.Fatalf("bad launch: action %+v", act)
	}
	data, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(data, &rep) != nil || rep.Verdict != model.VerdictFail {
		t.Fatalf("--report: %v, %s", err, data)
	}

	two := filepath.Join(dir, "two.json")
	os.WriteFile(two, []byte(`{"Records":[{"messageId":"a","body":"{}"},{"messageId":"b","body":"{}"}]}`), 0o644)
	malformed := filepath.Join(dir, "malformed.json")
	os.WriteFile(malformed, []byte(`{"LifecycleTransition":"autoscaling:EC2_INSTANCE_LAUNCHING"}`), 0o644)
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"test notification", nil, 0, "test notification acknowledged"},
		{"no --event", []string{"hook"}, 2, "hook needs --event"},
		{"a batch", []string{"hook", "--event", two}, 2, "with 2 messages"},
		{"malformed", []string{"hook", "--event", malformed}, 2, "without AutoScalingGroupName"},
		{"a directory", []string{"hook", "--event", dir}, 2, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args == nil {
				f := filepath.Join(dir, "test.json")
				os.WriteFile(f, []byte(`{"Service":"AWS Auto Scaling","Event":"autoscaling:TEST_NOTIFICATION","AutoScalingGroupName":"store-web-prod"}`), 0o644)
				args = []string{"hook", "--event", f}
			}
			_, stderr, code := polygraph(t, env, args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
		})
	}
}

func TestHookServeCommand(t *testing.T) {
	w, cfg := launchWorld(t, []testkit.Spec{{ID: "i-good"}, {ID: "i-bad"}}, "heartbeat_interval: 1s\nconcurrency: 2\ndrain_timeout: 5s")
	w.Fleet.Instance("i-bad").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", 30*time.Second)
	fq.Send(url, w.Launch("i-good", "tok-good", time.Minute))
	fq.Send(url, w.Launch("i-bad", "tok-bad", time.Minute))
	fq.Send(url, "garbage")
	cmd := exec.Command(binary, "hook", "serve", "--queue", url)
	cmd.Env = append(append(os.Environ(), w.Env()...), "POLYGRAPH_CONFIG="+cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"raw": sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for fq.Stats(url).Deleted < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	var handled []string
	for m := range lines {
		if m["message_id"] != nil {
			handled = append(handled, m["outcome"].(string)+":"+strings.TrimSpace(fmtAny(m["decision"])))
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 || len(handled) != 3 {
		t.Fatalf("exit %d, message lines %v", code, handled)
	}
	for token, want := range map[string]string{"tok-good": "CONTINUE", "tok-bad": "ABANDON"} {
		if act, _ := w.AWS.AutoScaling().Action(token); act.Result != want || act.Completions != 1 {
			t.Fatalf("%s: %+v", token, act)
		}
	}
}

func fmtAny(v any) string {
	if v == nil {
		return ""
	}
	s, _ := v.(string)
	return s
}

func TestHookServeKilled(t *testing.T) {
	// A worker is killed (SIGKILL: no drain, no goodbye) while the instance is still booting.
	// The message reappears once its visibility runs out, a second worker answers it, and the
	// action is completed exactly once.
	w, cfg := launchWorld(t, []testkit.Spec{{ID: "i-slow", Status: 503}}, "heartbeat_interval: 200ms\nready_timeout: 60s")
	fq := w.AWS.SQS()
	url := fq.CreateQueue("launches", 30*time.Second)
	fq.Send(url, w.Launch("i-slow", "tok", time.Minute))
	start := func() *exec.Cmd {
		cmd := exec.Command(binary, "hook", "serve", "--queue", url, "--visibility", "1s")
		cmd.Env = append(append(os.Environ(), w.Env()...), "POLYGRAPH_CONFIG="+cfg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	first := start()
	for deadline := time.Now().Add(20 * time.Second); len(w.AWS.Calls("RecordLifecycleActionHeartbeat")) < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	first.Process.Kill()
	first.Wait()
	if act, _ := w.AWS.AutoScaling().Action("tok"); act.Result != "" || fq.Stats(url).Deleted != 0 {
		t.Fatalf("after the kill: action %+v, queue %+v", act, fq.Stats(url))
	}
	w.Fleet.Instance("i-slow").Set(func(s *testkit.Spec) { s.Status = 0 })
	second := start()
	for deadline := time.Now().Add(20 * time.Second); fq.Stats(url).Deleted < 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	second.Process.Signal(syscall.SIGTERM)
	second.Wait()
	act, _ := w.AWS.AutoScaling().Action("tok")
	if act.Result != "CONTINUE" || act.Completions != 1 || fq.Stats(url).MaxReceives < 2 || second.ProcessState.ExitCode() != 0 {
		t.Fatalf("action %+v, queue %+v, exit %d", act, fq.Stats(url), second.ProcessState.ExitCode())
	}
}
