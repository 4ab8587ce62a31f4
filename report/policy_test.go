package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/policy"
)

// corpusNow is the policy corpus's "today", for the expiry of its exceptions.
var corpusNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const testDigest = "sha256:6e1f1b0b5b7cbd0b8f4b0a3dd2f9fbbd6b5b3f0c7f36ad44cfba4a911b0e4a3b"

// policyReport is a report of the given findings, sorted as policy.Check sorts them, with
// the verdict policy.Check would give.
func policyReport(fs ...policy.Finding) *policy.Report {
	r := &policy.Report{Schema: policy.Schema, Verdict: "pass", Findings: fs}
	for _, f := range fs {
		switch {
		case f.Severity == model.SeverityError:
			r.Verdict = "fail"
		case r.Verdict == "pass":
			r.Verdict = "warn"
		}
	}
	r.Summary.Findings = len(fs)
	return r
}

// corpusReport checks the corpus, for renderer tests.
func corpusReport(t *testing.T) *policy.Report {
	t.Helper()
	cfg, err := config.Load("../policy/testdata/corpus/polygraph.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../policy/testdata/corpus")
	in, err := policy.Load(context.Background(), []string{"."}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := policy.Check(context.Background(), in, policy.WithConfig(cfg), policy.WithNow(func() time.Time { return corpusNow }))
	if err != nil {
		t.Fatal(err)
	}
	r.Findings[0].Suggestion = "nginx:1.25@" + testDigest // exercise the suggestion paths
	return r
}

// TestSARIFValidates validates SARIF output against the official SARIF 2.1.0 schema (errata01),
// which go-sarif embeds. go-sarif validates its own object model, so the test first checks that
// our document survives the round trip through that model unchanged: what is validated is
// exactly what we wrote.
func TestSARIFValidates(t *testing.T) {
	r := corpusReport(t)
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "sarif", Options{Version: "v1.2.3"}); err != nil {
		t.Fatal(err)
	}
	log, err := sarif.FromBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	round, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs any
	if err := json.Unmarshal(buf.Bytes(), &ours); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(round, &theirs); err != nil {
		t.Fatal(err)
	}
	// go-sarif's model writes absent members as empty arrays; every member we wrote must come
	// back unchanged.
	if path, ok := contains(theirs, ours, "$"); !ok {
		t.Fatalf("SARIF member %s does not survive the round trip through go-sarif's model:\n%s", path, buf.String())
	}
	if err := log.Validate(); err != nil {
		t.Fatalf("SARIF does not validate against the 2.1.0 schema: %v", err)
	}

	// Precise regions and rules with help text.
	run := log.Runs[0]
	if len(run.Results) != len(r.Findings) {
		t.Fatalf("%d results for %d findings", len(run.Results), len(r.Findings))
	}
	for i, res := range run.Results {
		f := r.Findings[i]
		reg := res.Locations[0].PhysicalLocation.Region
		if *reg.StartLine != f.Line || *reg.StartColumn != f.Column || *res.Locations[0].PhysicalLocation.ArtifactLocation.URI != f.File {
			t.Errorf("result %d region does not match finding %+v", i, f)
		}
		rule := run.Tool.Driver.Rules[res.RuleIndex]
		if *rule.ID != *res.RuleID || rule.Help == nil || rule.Help.Text == nil || *rule.Help.Text == "" {
			t.Errorf("result %d: rule %q without help", i, *res.RuleID)
		}
	}
}

// contains reports whether every member of want is in got with the same value, and if not, where.
func contains(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := contains(g[k], v, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(got, want)
}

func TestSARIFStructure(t *testing.T) {
	r := policyReport(policy.Finding{Rule: policy.RuleLatestTag, Severity: model.SeverityError, File: "/abs/dir with space/k.yaml", Line: 3, Column: 5, EndColumn: 10, Image: "nginx", Message: "m"},
		policy.Finding{Rule: policy.RuleUnresolvedImage, Severity: model.SeverityWarning, File: policy.Stdin, Line: 1, Column: 1, Image: "x", Message: "m"})
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "sarif", Options{}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{`"version": "2.1.0"`, `"uri": "file:///abs/dir%20with%20space/k.yaml"`, `"uri": "stdin"`, `"level": "warning"`, `"endColumn": 10`} {
		if !strings.Contains(s, want) {
			t.Errorf("SARIF lacks %s", want)
		}
	}
}

func TestJSONReport(t *testing.T) {
	r := corpusReport(t)
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "json", Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string           `json:"schema"`
		Verdict  string           `json:"verdict"`
		Findings []map[string]any `json:"findings"`
		Summary  map[string]any   `json:"summary"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "polygraph.policy/v1" || doc.Verdict != "fail" || len(doc.Findings) == 0 {
		t.Fatalf("report = %s", buf.String())
	}
	for _, k := range []string{"rule", "severity", "file", "line", "column", "image", "message", "suggestion"} {
		if _, ok := doc.Findings[0][k]; !ok {
			t.Errorf("finding lacks %q", k)
		}
	}
	for _, k := range []string{"files", "images", "findings"} {
		if _, ok := doc.Summary[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
}

func TestGitHubAnnotations(t *testing.T) {
	r := policyReport( // in policy.Check's order: by file
		policy.Finding{Rule: policy.RuleUnresolvedImage, Severity: model.SeverityWarning, File: "c.yml", Line: 3, Column: 12, Image: "a", Message: "cannot check"},
		policy.Finding{Rule: policy.RuleMutableTag, Severity: model.SeverityError, File: "deploy/a,b:c.yaml", Line: 12, Column: 16, EndColumn: 26, Image: "nginx:1.25", Message: "100% \"nginx:1.25\"\nmutable", Suggestion: "nginx:1.25@sha256:x"},
	)
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "github", Options{}); err != nil {
		t.Fatal(err)
	}
	want := "::warning file=c.yml,line=3,col=12,title=polygraph unresolved-image::cannot check\n" +
		"::error file=deploy/a%2Cb%3Ac.yaml,line=12,col=16,endColumn=26,title=polygraph mutable-tag::100%25 \"nginx:1.25\"%0Amutable%0Afix: nginx:1.25@sha256:x\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestTextOutput(t *testing.T) {
	r := policyReport(policy.Finding{Rule: policy.RuleLatestTag, Severity: model.SeverityError, File: "k.yaml", Line: 9, Column: 16, Image: "nginx", Message: "m", Suggestion: "nginx@sha256:x"})
	r.Summary.Images, r.Summary.Files = 2, 1
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"plain", Options{}, "k.yaml:9:16: error latest-tag: m\n    fix: nginx@sha256:x\npolicy fail: 1 finding in 2 image references across 1 file\n"},
		{"quiet", Options{Quiet: true}, "policy fail: 1 finding in 2 image references across 1 file\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderPolicy(&buf, r, "text", tt.o); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("got %q, want %q", buf.String(), tt.want)
			}
		})
	}
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "text", Options{Color: true}); err != nil || !strings.Contains(buf.String(), "\x1b[31merror") {
		t.Errorf("colour output %q, %v", buf.String(), err)
	}
}

// TestSARIFValidatorRejects guards the validation above: a document with an invalid level or a
// region starting at column 0 must not validate.
func TestSARIFValidatorRejects(t *testing.T) {
	r := policyReport(policy.Finding{Rule: policy.RuleLatestTag, Severity: model.SeverityError, File: "k.yaml", Line: 3, Column: 5, Image: "nginx", Message: "m"})
	var buf bytes.Buffer
	if err := RenderPolicy(&buf, r, "sarif", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, old, new string }{
		{"level", `"level": "error"`, `"level": "fatal"`},
		{"column", `"startColumn": 5`, `"startColumn": 0`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(buf.String(), tt.old, tt.new, 1)
			if bad == buf.String() {
				t.Fatalf("%s not found", tt.old)
			}
			log, err := sarif.FromString(bad)
			if err != nil {
				t.Fatal(err)
			}
			if log.Validate() == nil {
				t.Errorf("a document with %s validated", tt.new)
			}
		})
	}
}
