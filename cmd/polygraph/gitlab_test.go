package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type gitlabJob struct {
	Extends      string   `yaml:"extends"`
	Image        string   `yaml:"image"`
	BeforeScript []string `yaml:"before_script"`
	Script       []string `yaml:"script"`
}

// runGitLabJob runs a job's script lines as a GitLab shell runner does (bash, stopping at the
// first failing line) in dir, with the template's variables plus vars, and the polygraph under
// test on PATH. before_script (go install of a release) is not run: tests send nothing off
// loopback.
func runGitLabJob(t *testing.T, job, dir string, vars map[string]string) (string, error) {
	t.Helper()
	var tmpl struct {
		Variables map[string]string `yaml:"variables"`
	}
	src, err := os.ReadFile("../../examples/ci/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]gitlabJob
	if err := yaml.Unmarshal(src, &tmpl); err != nil {
		t.Fatal(err)
	}
	yaml.Unmarshal(src, &jobs)
	j, ok := jobs[job]
	if !ok || len(j.Script) == 0 {
		t.Fatalf("no job %q with a script", job)
	}
	script := "set -eo pipefail\n" + strings.Join(j.Script, "\n") + "\n"
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range tmpl.Variables {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestGitLabTemplate(t *testing.T) {
	src, _ := os.ReadFile("../../examples/ci/gitlab-ci.yml")
	var jobs map[string]gitlabJob
	if err := yaml.Unmarshal(src, &jobs); err != nil {
		t.Fatal(err)
	}
	digest := regexp.MustCompile(`^[\w./:-]+@sha256:[0-9a-f]{64}$`)
	if img := jobs[".polygraph"].Image; !digest.MatchString(img) {
		t.Errorf("image %q is not pinned by digest", img)
	}
	install := strings.Join(jobs[".polygraph"].BeforeScript, "\n")
	if !strings.Contains(install, "polygraph@${POLYGRAPH_VERSION}") {
		t.Errorf("before_script does not install a pinned release: %s", install)
	}

	deploy, _ := filepath.Abs("../../examples/policy/deploy")
	config, _ := filepath.Abs("../../examples/policy/polygraph.yaml")
	t.Run("policy findings fail the job, JSON kept", func(t *testing.T) {
		dir := t.TempDir()
		out, err := runGitLabJob(t, "polygraph-policy", dir, map[string]string{"POLYGRAPH_PATHS": deploy, "POLYGRAPH_CONFIG": config})
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("job ended with %v, want exit 1:\n%s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "polygraph-policy.json"))
		if err != nil || !strings.Contains(string(b), `"verdict": "fail"`) {
			t.Errorf("polygraph-policy.json: %v %.200s", err, b)
		}
		if !strings.Contains(out, "fluent/fluent-bit:3.1") {
			t.Errorf("job log lacks the finding:\n%s", out)
		}
	})
	t.Run("policy pass", func(t *testing.T) {
		clean, _ := filepath.Abs("../../Dockerfile")
		if out, err := runGitLabJob(t, "polygraph-policy", t.TempDir(), map[string]string{"POLYGRAPH_PATHS": clean}); err != nil {
			t.Fatalf("job failed: %v\n%s", err, out)
		}
	})
	t.Run("fail-on never", func(t *testing.T) {
		out, err := runGitLabJob(t, "polygraph-policy", t.TempDir(), map[string]string{"POLYGRAPH_PATHS": deploy, "POLYGRAPH_CONFIG": config, "POLYGRAPH_FAIL_ON": "never"})
		if err != nil {
			t.Fatalf("job failed: %v\n%s", err, out)
		}
	})
}
