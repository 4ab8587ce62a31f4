package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// xmlNode is a generic element, to check the JUnit shape without trusting our own structs.
type xmlNode struct {
	Name     string
	Attrs    map[string]string
	Children []*xmlNode
	Text     string
}

func parseXML(t *testing.T, b []byte) *xmlNode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{Name: tk.Name.Local, Attrs: map[string]string{}}
			for _, a := range tk.Attr {
				n.Attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tk)
			}
		}
	}
	return root
}

// junitShape lists, per element, the attributes it requires and may have and the children it
// may have, as the JUnit schema GitLab and Jenkins read them (Jenkins' junit plugin schema,
// GitLab's test report parser).
var junitShape = map[string]struct{ required, optional, children []string }{
	"testsuites": {[]string{"tests", "failures", "errors"}, []string{"name", "skipped", "time", "disabled"}, []string{"testsuite"}},
	"testsuite":  {[]string{"name", "tests", "failures", "errors", "skipped", "time"}, []string{"timestamp", "hostname", "id", "package", "disabled"}, []string{"testcase", "properties", "system-out", "system-err"}},
	"testcase":   {[]string{"name", "classname"}, []string{"time", "status", "assertions"}, []string{"failure", "error", "skipped", "system-out", "system-err"}},
	"failure":    {[]string{"message"}, []string{"type"}, nil},
	"error":      {[]string{"message"}, []string{"type"}, nil},
	"skipped":    {nil, []string{"message"}, nil},
}

var (
	xsdDecimal   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	xsdTimestamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`) // ISO 8601, no zone, as the schema's pattern
)

// checkJUnitShape validates the document against junitShape and its arithmetic: every count is
// a non-negative integer that equals the test cases it counts, at every level.
func checkJUnitShape(t reporter, n *xmlNode) (tests, failures, errs, skipped int) {
	t.Helper()
	shape, ok := junitShape[n.Name]
	if !ok {
		t.Fatalf("element <%s> is not part of JUnit XML", n.Name)
	}
	allowed := map[string]bool{}
	for _, a := range append(append([]string{}, shape.required...), shape.optional...) {
		allowed[a] = true
	}
	for _, a := range shape.required {
		if _, ok := n.Attrs[a]; !ok {
			t.Errorf("<%s> lacks the attribute %s", n.Name, a)
		}
	}
	for a := range n.Attrs {
		if !allowed[a] {
			t.Errorf("<%s> has the attribute %s, unknown to JUnit readers", n.Name, a)
		}
	}
	for _, c := range n.Children {
		if !slices.Contains(shape.children, c.Name) {
			t.Errorf("<%s> holds <%s>", n.Name, c.Name)
		}
	}
	if v, ok := n.Attrs["time"]; ok && !xsdDecimal.MatchString(v) {
		t.Errorf("<%s time=%q> is not a decimal", n.Name, v)
	}
	if v, ok := n.Attrs["timestamp"]; ok && !xsdTimestamp.MatchString(v) {
		t.Errorf("<%s timestamp=%q> is not a schema timestamp", n.Name, v)
	}
	switch n.Name {
	case "testcase":
		outcomes := 0
		for _, c := range n.Children {
			switch c.Name {
			case "failure":
				failures++
				outcomes++
			case "error":
				errs++
				outcomes++
			case "skipped":
				skipped++
				outcomes++
			}
		}
		if outcomes > 1 {
			t.Errorf("test case %q has %d outcomes", n.Attrs["name"], outcomes)
		}
		return 1, failures, errs, skipped
	case "failure", "error", "skipped":
		return 0, 0, 0, 0
	}
	for _, c := range n.Children {
		a, b, c2, d := checkJUnitShape(t, c)
		tests, failures, errs, skipped = tests+a, failures+b, errs+c2, skipped+d
	}
	for attr, want := range map[string]int{"tests": tests, "failures": failures, "errors": errs, "skipped": skipped} {
		v, ok := n.Attrs[attr]
		if !ok {
			continue
		}
		got, err := strconv.Atoi(v)
		if err != nil || got != want {
			t.Errorf("<%s name=%q %s=%q>, but it holds %d", n.Name, n.Attrs["name"], attr, v, want)
		}
	}
	return tests, failures, errs, skipped
}

// reporter is what checkJUnitShape needs of a *testing.T, so that a test can check it fails.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// recorder records failures instead of failing the test; Fatalf stops by panicking, as
// t.Fatalf stops a test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

func finding(kind model.Kind, sev model.Severity, instance string) model.Finding {
	return model.Finding{Kind: kind, Severity: sev, Instance: instance, Message: fmt.Sprintf("%s about %s", kind, instance)}
}

func assetFinding(kind model.Kind, sev model.Severity, url string, ids ...string) model.Finding {
	return model.Finding{Kind: kind, Severity: sev, Instances: ids, URL: url, Status: 403, Message: fmt.Sprintf("%s %s", kind, url)}
}

// judged fills in the verdict and summary as the judge would.
func judged(r *model.Report) *model.Report {
	r.Schema = model.ReportSchema
	r.Summary.Findings = len(r.Findings)
	r.Summary.Instances = len(r.Instances)
	if r.Verdict == model.VerdictError {
		return r
	}
	switch r.Worst() {
	case model.SeverityError:
		r.Verdict = model.VerdictFail
	case model.SeverityWarning:
		r.Verdict = model.VerdictWarn
	default:
		r.Verdict = model.VerdictPass
	}
	return r
}

func twoInstances() []model.Instance {
	return []model.Instance{{ID: "web-1", Address: "127.0.0.1:8080", Status: model.StatusOK}, {ID: "web-2", Address: "127.0.0.2:8080", Status: model.StatusOK}}
}

// TestJUnitCountsFollowTheExitCode: failures is 0 exactly when the exit code is 0 or 3, errors
// is 0 exactly when it is not 3, for every kind of report and every --fail-on.
func TestJUnitCountsFollowTheExitCode(t *testing.T) {
	reports := map[string]func() *model.Report{
		"pass": func() *model.Report {
			return judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Requests: 10}})
		},
		"warnings only": func() *model.Report {
			return judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Unchecked: 1},
				Findings: []model.Finding{finding(model.KindCertExpiring, model.SeverityWarning, "web-1"),
					assetFinding(model.KindAssetUnchecked, model.SeverityWarning, "https://cdn/a.js", "web-1", "web-2")}})
		},
		"errors and warnings": func() *model.Report {
			return judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Missing: 1},
				Findings: []model.Finding{finding(model.KindVersionLie, model.SeverityError, "web-2"), finding(model.KindCertExpiring, model.SeverityWarning, "web-2"),
					finding(model.KindUnreachable, model.SeverityError, "web-1"),
					assetFinding(model.KindAssetMissing, model.SeverityError, "https://cdn/b.js", "web-2"),
					{Kind: model.KindTagMoved, Severity: model.SeverityError, Message: "the tag was re-pushed"}}})
		},
		"could not verify": func() *model.Report {
			return judged(&model.Report{Verdict: model.VerdictError, Error: "resolving \"store-web:v2\": registry unreachable"})
		},
		"could not verify, with findings": func() *model.Report {
			return judged(&model.Report{Verdict: model.VerdictError, Error: "interrupted", Instances: twoInstances(),
				Findings: []model.Finding{finding(model.KindContentMismatch, model.SeverityError, "web-1")}})
		},
		"dead CDN": func() *model.Report {
			return judged(&model.Report{Instances: twoInstances(), Error: "the primary CDN gave no HTTP response to any asset request",
				CDN: model.CDNSummary{Checked: 10, Unchecked: 10}, Findings: []model.Finding{assetFinding(model.KindAssetUnchecked, model.SeverityWarning, "https://cdn/a.js", "web-1")}})
		},
		"dead CDN and an error finding": func() *model.Report {
			return judged(&model.Report{Instances: twoInstances(), Error: "the primary CDN gave no HTTP response to any asset request",
				CDN: model.CDNSummary{Checked: 10, Unchecked: 10}, Findings: []model.Finding{finding(model.KindVersionLie, model.SeverityError, "web-1")}})
		},
	}
	seenCodes := map[int]bool{}
	for name, mk := range reports {
		for _, failOn := range []model.Severity{model.SeverityError, model.SeverityWarning, "never"} {
			t.Run(fmt.Sprintf("%s/fail-on-%s", name, failOn), func(t *testing.T) {
				r := mk()
				code := r.ExitCode(failOn)
				seenCodes[code] = true
				var b bytes.Buffer
				if err := Render(&b, r, "junit", Options{FailOn: failOn}); err != nil {
					t.Fatal(err)
				}
				root := parseXML(t, b.Bytes())
				if root.Name != "testsuites" {
					t.Fatalf("root is <%s>", root.Name)
				}
				tests, failures, errs, skipped := checkJUnitShape(t, root)
				if (failures == 0) != (code == 0 || code == 3) {
					t.Errorf("exit code %d but %d failures", code, failures)
				}
				if (errs == 0) != (code != 3) {
					t.Errorf("exit code %d but %d errors", code, errs)
				}
				if tests < len(r.Instances) {
					t.Errorf("%d test cases for %d instances", tests, len(r.Instances))
				}
				if t.Failed() {
					t.Logf("tests %d, skipped %d:\n%s", tests, skipped, b.String())
				}
			})
		}
	}
	for _, code := range []int{0, 1, 3} {
		if !seenCodes[code] {
			t.Errorf("no case exits %d", code)
		}
	}
}

// TestJUnitCases pins what each test case says.
func TestJUnitCases(t *testing.T) {
	r := judged(&model.Report{Instances: twoInstances(), DurationMS: 1500, CDN: model.CDNSummary{Checked: 10, Missing: 1, Unchecked: 1},
		Findings: []model.Finding{finding(model.KindVersionLie, model.SeverityError, "web-2"), finding(model.KindCertExpiring, model.SeverityWarning, "web-1"),
			assetFinding(model.KindAssetMissing, model.SeverityError, "https://cdn/b.js", "web-2"),
			assetFinding(model.KindAssetUnchecked, model.SeverityWarning, "https://cdn/c.js", "web-1", "web-2")}})
	var b bytes.Buffer
	if err := Render(&b, r, "junit", Options{}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		`<testsuites name="polygraph verify" tests="4" failures="2" errors="0" skipped="2" time="1.500">`,
		`<testsuite name="instances" tests="2" failures="1" errors="0" skipped="1" time="1.500">`,
		`<testcase name="web-1 (127.0.0.1:8080)" classname="polygraph.instances">`,
		`<skipped message="cert-expiring about web-1">cert-expiring (warning): cert-expiring about web-1</skipped>`,
		`<failure message="version-lie about web-2" type="version-lie">version-lie (error): version-lie about web-2</failure>`,
		`<testcase name="asset-missing https://cdn/b.js" classname="polygraph.assets">`,
		`<testcase name="asset-unchecked https://cdn/c.js" classname="polygraph.assets">`,
		`<skipped message="asset-unchecked https://cdn/c.js">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("JUnit lacks %s\n%s", want, got)
		}
	}
	// With --fail-on warning the warnings fail too.
	b.Reset()
	if err := Render(&b, r, "junit", Options{FailOn: model.SeverityWarning}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `failures="4" errors="0" skipped="0"`) {
		t.Errorf("--fail-on warning:\n%s", b.String())
	}
}

// A run that checked no asset has no passing assets test case: checking nothing is not a pass.
func TestJUnitNothingCheckedIsNoPass(t *testing.T) {
	for name, tc := range map[string]struct {
		cdn  model.CDNSummary
		want string
	}{
		"nothing checked": {model.CDNSummary{}, `<skipped message="no findings about the instances, but no asset was checked on the CDN">`},
		"some unchecked":  {model.CDNSummary{Checked: 5, Unchecked: 2}, `<skipped message="no findings, but 2 asset(s) could not be checked on the CDN: unknown, not missing">`},
		"all checked":     {model.CDNSummary{Checked: 5}, `<testcase name="assets on the CDN" classname="polygraph.assets"></testcase>`},
	} {
		t.Run(name, func(t *testing.T) {
			r := judged(&model.Report{Instances: twoInstances(), CDN: tc.cdn})
			var b bytes.Buffer
			if err := Render(&b, r, "junit", Options{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("lacks %s:\n%s", tc.want, b.String())
			}
		})
	}
}

// The shape check itself must reject what JUnit readers do not read.
func TestJUnitShapeCheckRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"count off":       `<testsuites tests="2" failures="0" errors="0"><testsuite name="a" tests="1" failures="0" errors="0" skipped="0" time="0"><testcase name="x" classname="c"/></testsuite></testsuites>`,
		"no time":         `<testsuites tests="1" failures="0" errors="0"><testsuite name="a" tests="1" failures="0" errors="0" skipped="0"><testcase name="x" classname="c"/></testsuite></testsuites>`,
		"bad timestamp":   `<testsuites tests="1" failures="0" errors="0"><testsuite name="a" tests="1" failures="0" errors="0" skipped="0" time="0" timestamp="2026-11-29T12:00:00Z"><testcase name="x" classname="c"/></testsuite></testsuites>`,
		"two outcomes":    `<testsuites tests="1" failures="1" errors="1"><testsuite name="a" tests="1" failures="1" errors="1" skipped="0" time="0"><testcase name="x" classname="c"><failure message="m"/><error message="m"/></testcase></testsuite></testsuites>`,
		"unknown element": `<testsuites tests="1" failures="0" errors="0"><testsuite name="a" tests="1" failures="0" errors="0" skipped="0" time="0"><case name="x"/></testsuite></testsuites>`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{TB: t}
			func() {
				defer func() {
					if p := recover(); p != nil && p != rec {
						panic(p)
					}
				}()
				checkJUnitShape(rec, parseXML(t, []byte(doc)))
			}()
			if !rec.failed {
				t.Errorf("%s passed the shape check", name)
			}
		})
	}
}
