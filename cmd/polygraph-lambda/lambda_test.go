package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
)

// rieModule is the Lambda Runtime Interface Emulator the function is tested in: the real
// emulator AWS ships in its base images, built from source.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator@v0.0.0-20261030222936-bef5c4ba774d"

func goBuild(t *testing.T, dir, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
}

// buildRIE downloads the emulator's module through the Go module proxy and builds it.
func buildRIE(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", rieModule)
	cmd.Dir = t.TempDir() // outside this module: nothing is added to go.mod
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("downloading %s: %v", rieModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("downloading %s: %s", rieModule, out)
	}
	rie := filepath.Join(bin, "aws-lambda-rie")
	goBuild(t, mod.Dir, rie, "./cmd/aws-lambda-rie")
	return rie
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestLambdaInTheRuntimeInterfaceEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Lambda Runtime Interface Emulator")
	}
	bin := t.TempDir()
	rie := buildRIE(t, bin)
	fn := filepath.Join(bin, "bootstrap")
	goBuild(t, ".", fn, ".")

	w, err := testkit.StartLaunchWorld(context.Background(), []testkit.Spec{{ID: "i-good"}, {ID: "i-bad"}, {ID: "i-batch-good"}, {ID: "i-denied"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Fleet.Instance("i-bad").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	dir := t.TempDir()
	if _, err := w.WriteConfig(dir, "heartbeat_interval: 1s\nready_timeout: 5s"); err != nil {
		t.Fatal(err)
	}
	// The config comes from Parameter Store, as a deployed function reads it.
	w.AWS.SSMParameters().Put("/polygraph/config", w.ConfigYAML(filepath.Join(dir, "release.json"), "heartbeat_interval: 1s\nready_timeout: 5s"))

	addr := freeAddr(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freeAddr(t), "--log-level", "error", fn)
	cmd.Env = append(append(os.Environ(), w.Env()...), "POLYGRAPH_CONFIG_PARAMETER=/polygraph/config", "AWS_LAMBDA_FUNCTION_TIMEOUT=60")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("emulator and function logs:\n%s", logs.String())
		}
	}()
	invoke := func(payload string) map[string]any {
		t.Helper()
		url := "http://" + addr + "/2015-03-31/functions/function/invocations"
		var resp *http.Response
		for deadline := time.Now().Add(10 * time.Second); ; {
			resp, err = http.Post(url, "application/json", strings.NewReader(payload))
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("invocation answered %d %s", resp.StatusCode, body)
		}
		return out
	}

	out := invoke(testkit.EventBridge(w.Launch("i-good", "tok-good", time.Minute)))
	if out["decision"] != "CONTINUE" || out["completed"] != true {
		t.Fatalf("EventBridge event: %v", out)
	}

	record := func(id, body string) string {
		b, _ := json.Marshal(body)
		return fmt.Sprintf(`{"messageId":%q,"receiptHandle":"r-%s","body":%s,"eventSource":"aws:sqs","awsRegion":"us-east-1"}`, id, id, b)
	}
	batch := `{"Records":[` + strings.Join([]string{
		record("m-bad", w.Launch("i-bad", "tok-bad", time.Minute)),
		record("m-good", testkit.EventBridge(w.Launch("i-batch-good", "tok-batch-good", time.Minute))),
		record("m-garbage", "not an event"),
	}, ",") + `]}`
	out = invoke(batch)
	if failures, ok := out["batchItemFailures"].([]any); !ok || len(failures) != 0 {
		t.Fatalf("SQS batch: %v, want no failures (the garbage message is dropped, not retried)", out)
	}
	for token, want := range map[string]string{"tok-good": "CONTINUE", "tok-bad": "ABANDON", "tok-batch-good": "CONTINUE"} {
		if act, _ := w.AWS.AutoScaling().Action(token); act.Result != want || act.Completions != 1 {
			t.Fatalf("%s: %+v, want one %s", token, act, want)
		}
	}

	// An action the function cannot complete is reported as a batch item failure, so Lambda
	// leaves the message on the queue.
	w.AWS.Fail("CompleteLifecycleAction", "AccessDenied", "not authorized to perform: autoscaling:CompleteLifecycleAction", 1)
	out = invoke(`{"Records":[` + record("m-denied", w.Launch("i-denied", "tok-denied", time.Minute)) + `]}`)
	failures, _ := out["batchItemFailures"].([]any)
	if len(failures) != 1 || failures[0].(map[string]any)["itemIdentifier"] != "m-denied" {
		t.Fatalf("denied completion: %v, want m-denied as a batch item failure", out)
	}
	if n := len(w.AWS.Calls("GetParameter")); n != 1 {
		t.Fatalf("%d GetParameter calls: the config is read once, at start", n)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "polygraph.yaml")
	os.WriteFile(path, []byte("fleet:\n  ec2: {region: us-east-1, port: 8080}\nhook:\n  on_error: continue\n"), 0o644)
	t.Setenv("POLYGRAPH_CONFIG", path)
	t.Setenv("POLYGRAPH_CONFIG_PARAMETER", "")
	cfg, err := loadConfig(context.Background())
	if err != nil || cfg.Hook.OnError != "continue" || cfg.File != path {
		t.Fatalf("bundled file: %+v, %v", cfg, err)
	}
	os.WriteFile(path, []byte("hook:\n  on_eror: continue\n"), 0o644)
	if _, err := loadConfig(context.Background()); err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("a bad bundled file: %v, want its name and line", err)
	}
	t.Setenv("POLYGRAPH_CONFIG", "")
	if _, err := loadConfig(context.Background()); err == nil || !strings.Contains(err.Error(), "POLYGRAPH_CONFIG_PARAMETER") {
		t.Fatalf("no config named: %v", err)
	}
}
