package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// policyRecipeCommands returns the `polygraph policy check` command lines of a CI recipe: the
// run: of GitHub Actions steps and the script: lines of GitLab jobs.
func policyRecipeCommands(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var lines []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if s, ok := x[k].(string); ok && k == "run" {
					lines = append(lines, strings.Split(s, "\n")...)
				}
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					lines = append(lines, s)
				}
				walk(e)
			}
		}
	}
	walk(doc)
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "polygraph policy check") {
			out = append(out, l)
		}
	}
	return out
}

// TestPolicyExamples runs the real binary (built by TestMain) on every `polygraph policy check` command of
// the CI recipes in examples/policy, as the CI would, asserting exit status and findings.
func TestPolicyExamples(t *testing.T) {
	dir, err := filepath.Abs("../../examples/policy")
	if err != nil {
		t.Fatal(err)
	}
	wantFindings := []string{
		"deploy/Dockerfile:2:6 mutable-tag",
		"deploy/compose.yaml:3:12 latest-tag",
		"deploy/compose.yaml:6:12 disallowed-registry",
		"deploy/k8s/web.yaml:23:18 mutable-tag",
	}
	ran := 0
	for _, recipe := range []string{"github-actions.yml", "gitlab-ci.yml"} {
		cmds := policyRecipeCommands(t, filepath.Join(dir, recipe))
		if len(cmds) == 0 {
			t.Fatalf("%s: no polygraph policy check command", recipe)
		}
		for _, line := range cmds {
			t.Run(recipe+"/"+line, func(t *testing.T) {
				ran++
				args := strings.Fields(line)[1:]
				if i := policyIndexOf(args, ">"); i >= 0 {
					args = args[:i] // the test reads stdout itself
				}
				work := t.TempDir()
				if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
					t.Fatal(err)
				}
				out, errOut, code := execIn(t, work, []string{"NO_COLOR=1"}, args...)
				wantCode := 1
				if strings.Contains(line, "--fail-on never") {
					wantCode = 0
				}
				if code != wantCode {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
				}
				got := policyFindingsOf(t, line, []byte(out))
				if strings.Join(got, "\n") != strings.Join(wantFindings, "\n") {
					t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFindings, "\n"))
				}
			})
		}
	}
	if ran < 4 {
		t.Errorf("ran %d recipe commands, want at least 4", ran)
	}
}

func policyIndexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// policyFindingsOf reads "FILE:LINE:COL RULE" out of any output format.
func policyFindingsOf(t *testing.T, line string, out []byte) []string {
	t.Helper()
	var got []string
	switch {
	case strings.Contains(line, "--output sarif"):
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string } `json:"artifactLocation"`
							Region           struct{ StartLine, StartColumn int }
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(out, &log); err != nil || log.Version != "2.1.0" {
			t.Fatalf("not SARIF 2.1.0: %v\n%s", err, out)
		}
		for _, r := range log.Runs[0].Results {
			l := r.Locations[0].PhysicalLocation
			got = append(got, l.ArtifactLocation.URI+":"+strconv.Itoa(l.Region.StartLine)+":"+strconv.Itoa(l.Region.StartColumn)+" "+r.RuleID)
		}
	case strings.Contains(line, "--output json"):
		var rep struct {
			Schema   string `json:"schema"`
			Findings []struct {
				Rule, File   string
				Line, Column int
			} `json:"findings"`
		}
		if err := json.Unmarshal(out, &rep); err != nil || rep.Schema != "polygraph.policy/v1" {
			t.Fatalf("not a policy report: %v\n%s", err, out)
		}
		for _, f := range rep.Findings {
			got = append(got, f.File+":"+strconv.Itoa(f.Line)+":"+strconv.Itoa(f.Column)+" "+f.Rule)
		}
	case strings.Contains(line, "--output github"):
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// ::error file=F,line=L,col=C,endColumn=E,title=polygraph RULE::message
			head, _, _ := strings.Cut(strings.TrimPrefix(l, "::error "), "::")
			props := map[string]string{}
			for _, kv := range strings.Split(head, ",") {
				k, v, _ := strings.Cut(kv, "=")
				props[k] = v
			}
			got = append(got, props["file"]+":"+props["line"]+":"+props["col"]+" "+strings.TrimPrefix(props["title"], "polygraph "))
		}
	default:
		for _, l := range strings.Split(string(out), "\n") {
			pos, rest, ok := strings.Cut(l, ": error ")
			if !ok {
				continue
			}
			rule, _, _ := strings.Cut(rest, ":")
			got = append(got, pos+" "+rule)
		}
	}
	return got
}
