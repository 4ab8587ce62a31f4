package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// actionDef is the part of action.yml a runner reads.
type actionDef struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	Name       string            `yaml:"name"`
	ID         string            `yaml:"id"`
	If         string            `yaml:"if"`
	Uses       string            `yaml:"uses"`
	Shell      string            `yaml:"shell"`
	Run        string            `yaml:"run"`
	WorkingDir string            `yaml:"working-directory"`
	Env        map[string]string `yaml:"env"`
	With       map[string]string `yaml:"with"`
}

// actionRun is the outcome of running the action's shell steps.
type actionRun struct {
	outputs map[string]map[string]string // step id -> outputs
	summary string
	stdout  string
	failed  string // name of the step that failed, "" when none did
	code    int    // its exit code
}

var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// runAction runs every shell step of action.yml as a GitHub runner would (bash --noprofile
// --norc -eo pipefail, step env with expressions evaluated, GITHUB_OUTPUT per step,
// GITHUB_STEP_SUMMARY shared), in workspace, with the given inputs over the defaults. Steps that
// use other actions are not run: their pinning and inputs are checked by TestActionPinned.
func runAction(t *testing.T, workspace string, inputs map[string]string) actionRun {
	t.Helper()
	var def actionDef
	src, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &def); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if def.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", def.Runs.Using)
	}
	in := map[string]string{}
	for k, v := range def.Inputs {
		in[k] = v.Default
	}
	for k, v := range inputs {
		if _, ok := def.Inputs[k]; !ok {
			t.Fatalf("action.yml has no input %q", k)
		}
		in[k] = v
	}
	actionPath, _ := filepath.Abs("../..")
	temp := t.TempDir()
	summary := filepath.Join(temp, "step-summary.md")
	os.WriteFile(summary, nil, 0o644)
	res := actionRun{outputs: map[string]map[string]string{}}
	eval := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			e := expr.FindStringSubmatch(m)[1]
			switch {
			case strings.HasPrefix(e, "inputs."):
				v, ok := in[strings.TrimPrefix(e, "inputs.")]
				if !ok {
					t.Fatalf("action.yml uses unknown input in %s", m)
				}
				return v
			case e == "github.action_path":
				return actionPath
			case e == "runner.temp":
				return temp
			case strings.HasPrefix(e, "steps."):
				parts := strings.Split(e, ".")
				if len(parts) != 4 || parts[2] != "outputs" {
					t.Fatalf("cannot evaluate %s", m)
				}
				return res.outputs[parts[1]][parts[3]]
			}
			t.Fatalf("the test cannot evaluate %s: teach it, or keep the step simpler", m)
			return ""
		})
	}
	var stdout bytes.Buffer
	for i, st := range def.Runs.Steps {
		if st.Uses != "" {
			continue
		}
		if st.Shell != "bash" {
			t.Fatalf("step %q: shell %q, want bash", st.Name, st.Shell)
		}
		if st.If != "" {
			t.Fatalf("step %q has an if: the test runs every shell step", st.Name)
		}
		script := filepath.Join(temp, fmt.Sprintf("step-%d.sh", i))
		os.WriteFile(script, []byte(st.Run), 0o644)
		outFile := filepath.Join(temp, fmt.Sprintf("output-%d", i))
		os.WriteFile(outFile, nil, 0o644)
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = workspace
		if st.WorkingDir != "" {
			cmd.Dir = eval(st.WorkingDir)
		}
		cmd.Env = append(os.Environ(), "GITHUB_OUTPUT="+outFile, "GITHUB_STEP_SUMMARY="+summary, "RUNNER_TEMP="+temp, "GITHUB_WORKSPACE="+workspace)
		for k, v := range st.Env {
			cmd.Env = append(cmd.Env, k+"="+eval(v))
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stdout
		err := cmd.Run()
		if st.ID != "" {
			res.outputs[st.ID] = readOutputs(t, outFile)
		}
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("step %q: %v", st.Name, err)
			}
			res.failed, res.code = st.Name, ee.ExitCode()
			break
		}
	}
	b, _ := os.ReadFile(summary)
	res.summary, res.stdout = string(b), stdout.String()
	return res
}

// readOutputs parses a GITHUB_OUTPUT file of name=value lines.
func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q is not name=value", sc.Text())
		}
		out[k] = v
	}
	return out
}

func TestActionPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds polygraph through the action")
	}
	root, _ := filepath.Abs("../..")
	t.Run("findings fail the job, SARIF and summary written", func(t *testing.T) {
		r := runAction(t, root, map[string]string{"paths": "examples/policy/deploy\n", "config": "examples/policy/polygraph.yaml"})
		if r.outputs["run"]["exit-code"] != "1" || r.failed != "Result" || r.code != 1 {
			t.Fatalf("exit-code %q, failed step %q (exit %d), want 1 and the Result step failing:\n%s", r.outputs["run"]["exit-code"], r.failed, r.code, r.stdout)
		}
		if !strings.Contains(r.stdout, "::error file=examples/policy/deploy/k8s/web.yaml,line=23") {
			t.Errorf("no pull request annotation for the k8s finding:\n%s", r.stdout)
		}
		for _, want := range []string{"## polygraph policy check", "mutable-tag", "fluent/fluent-bit:3.1", "```text"} {
			if !strings.Contains(r.summary, want) {
				t.Errorf("step summary lacks %q:\n%s", want, r.summary)
			}
		}
		var sarif struct {
			Version string `json:"version"`
			Runs    []struct {
				Results []json.RawMessage `json:"results"`
			} `json:"runs"`
		}
		b, err := os.ReadFile(r.outputs["run"]["sarif-file"])
		if err != nil || json.Unmarshal(b, &sarif) != nil || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 || len(sarif.Runs[0].Results) != 4 {
			t.Errorf("sarif-file %q: %v, %.300s", r.outputs["run"]["sarif-file"], err, b)
		}
	})
	t.Run("clean paths pass", func(t *testing.T) {
		r := runAction(t, root, map[string]string{"paths": "Dockerfile examples/ci"})
		if r.outputs["run"]["exit-code"] != "0" || r.failed != "" {
			t.Fatalf("exit-code %q, failed step %q:\n%s", r.outputs["run"]["exit-code"], r.failed, r.stdout)
		}
		if !strings.Contains(r.summary, "policy pass") {
			t.Errorf("step summary does not say pass:\n%s", r.summary)
		}
	})
	t.Run("skip-paths leave test data out, counted", func(t *testing.T) {
		r := runAction(t, root, map[string]string{"paths": "examples/policy", "config": "examples/policy/polygraph.yaml",
			"skip-paths": "examples/policy/deploy/**\n'**/nothing here/**'"})
		if r.outputs["run"]["exit-code"] != "0" || r.failed != "" {
			t.Fatalf("exit-code %q, failed step %q:\n%s", r.outputs["run"]["exit-code"], r.failed, r.stdout)
		}
		if !strings.Contains(r.summary, "3 files skipped") {
			t.Errorf("step summary does not count the skipped files:\n%s", r.summary)
		}
	})
	t.Run("fail-on never", func(t *testing.T) {
		r := runAction(t, root, map[string]string{"paths": "examples/policy/deploy", "config": "examples/policy/polygraph.yaml", "fail-on": "never"})
		if r.outputs["run"]["exit-code"] != "0" || r.failed != "" {
			t.Fatalf("exit-code %q, failed step %q:\n%s", r.outputs["run"]["exit-code"], r.failed, r.stdout)
		}
	})
	for _, tc := range []struct{ name, command, paths string }{
		{"no paths", "policy", " \n "},
		{"unknown command", "deploy", "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runAction(t, root, map[string]string{"command": tc.command, "paths": tc.paths})
			if r.outputs["run"]["exit-code"] != "2" || r.failed != "Result" || r.code != 2 {
				t.Fatalf("exit-code %q, failed step %q (exit %d), want 2:\n%s", r.outputs["run"]["exit-code"], r.failed, r.code, r.stdout)
			}
		})
	}
}

func TestActionVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds polygraph through the action")
	}
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
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
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
	r := runAction(t, dir, map[string]string{"command": "verify", "config": "polygraph.yaml"})
	if r.outputs["run"]["exit-code"] != "1" || r.failed != "Result" {
		t.Fatalf("exit-code %q, failed step %q:\n%s", r.outputs["run"]["exit-code"], r.failed, r.stdout)
	}
	if !strings.Contains(r.summary, "version-lie") || !strings.Contains(r.summary, "web-5") {
		t.Errorf("step summary is not the markdown report:\n%s", r.summary)
	}
	b, err := os.ReadFile(r.outputs["run"]["report-file"])
	if err != nil || !bytes.Contains(b, []byte(`"schema": "polygraph.report/v1"`)) {
		t.Errorf("report-file: %v %.200s", err, b)
	}
}

// TestActionPinned checks every action the composite action uses is pinned by a full commit
// SHA, and the SARIF upload is wired to the run step's output.
func TestActionPinned(t *testing.T) {
	var def actionDef
	src, _ := os.ReadFile("../../action.yml")
	if err := yaml.Unmarshal(src, &def); err != nil {
		t.Fatal(err)
	}
	sha := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	uploads := 0
	for _, st := range def.Runs.Steps {
		if st.Uses == "" {
			continue
		}
		if !sha.MatchString(st.Uses) {
			t.Errorf("step %q uses %q: pin it by full commit SHA", st.Name, st.Uses)
		}
		if strings.HasPrefix(st.Uses, "github/codeql-action/upload-sarif@") {
			uploads++
			if st.With["sarif_file"] != "${{ steps.run.outputs.sarif-file }}" || !strings.Contains(st.If, "always()") || !strings.Contains(st.If, "inputs.command == 'policy'") {
				t.Errorf("upload-sarif step not wired to the policy run: with %v, if %q", st.With, st.If)
			}
		}
	}
	if uploads != 1 {
		t.Errorf("%d upload-sarif steps, want 1", uploads)
	}
	// The workflow recipes we ship pin their actions the same way (policy check gates images,
	// not actions, so this test does).
	uses := regexp.MustCompile(`(?m)^\s*-?\s*uses:\s*(\S+)`)
	workflows, _ := filepath.Glob("../../.github/workflows/*.yml")
	if len(workflows) == 0 {
		t.Error("no workflows in .github/workflows")
	}
	for _, f := range append([]string{"../../action.yml", "../../examples/policy/github-actions.yml"}, workflows...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "./" { // this repository's own action, at the checked-out commit
				continue
			}
			if !sha.MatchString(m[1]) {
				t.Errorf("%s: uses %s: pin it by full commit SHA", f, m[1])
			}
		}
	}
}

// TestSelfCheckWorkflow runs the action with the inputs the repository's own CI gives it
// (.github/workflows/ci.yml): polygraph's gate passes over the repository itself.
func TestSelfCheckWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds polygraph through the action")
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []actionStep `yaml:"steps"`
		} `yaml:"jobs"`
	}
	src, err := os.ReadFile("../../.github/workflows/ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatal(err)
	}
	var with map[string]string
	for _, st := range wf.Jobs["policy"].Steps {
		if st.Uses == "./" {
			with = st.With
		}
	}
	if with == nil {
		t.Fatal("ci.yml has no policy job using the action (uses: ./)")
	}
	root, _ := filepath.Abs("../..")
	r := runAction(t, root, with)
	if r.outputs["run"]["exit-code"] != "0" || r.failed != "" {
		t.Fatalf("the self-check fails: exit-code %q, failed step %q:\n%s\n%s", r.outputs["run"]["exit-code"], r.failed, r.stdout, r.summary)
	}
	if !strings.Contains(r.summary, "policy pass") || !strings.Contains(r.summary, "files skipped") {
		t.Errorf("summary:\n%s", r.summary)
	}
}
