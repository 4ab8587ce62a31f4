package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// renderJUnit writes one test case per instance (failing with the error findings about it) and
// one per CDN or release-level error finding.
func renderJUnit(w io.Writer, r *model.Report) error {
	about := map[string][]model.Finding{}
	var other []model.Finding
	for _, f := range r.Findings {
		if f.Severity != model.SeverityError {
			continue
		}
		switch {
		case f.Instance != "":
			about[f.Instance] = append(about[f.Instance], f)
		default:
			other = append(other, f)
		}
	}
	inst := junitSuite{Name: "instances"}
	for _, in := range r.Instances {
		c := junitCase{Name: in.ID + " (" + in.Address + ")", Classname: "polygraph.instances"}
		if fs := about[in.ID]; len(fs) > 0 {
			c.Failure = failureOf(fs)
			inst.Failures++
		}
		inst.Cases = append(inst.Cases, c)
	}
	inst.Tests = len(inst.Cases)
	fleet := junitSuite{Name: "fleet"}
	for _, f := range other {
		name := string(f.Kind)
		if f.URL != "" {
			name += " " + f.URL
		}
		fleet.Cases = append(fleet.Cases, junitCase{Name: name, Classname: "polygraph.fleet", Failure: failureOf([]model.Finding{f})})
	}
	if len(fleet.Cases) == 0 {
		fleet.Cases = append(fleet.Cases, junitCase{Name: "assets exist on the CDN", Classname: "polygraph.fleet"})
	}
	fleet.Tests, fleet.Failures = len(fleet.Cases), len(other)
	out := junitSuites{Name: "polygraph verify", Suites: []junitSuite{inst, fleet},
		Tests: inst.Tests + fleet.Tests, Failures: inst.Failures + fleet.Failures, Time: fmt.Sprintf("%.3f", float64(r.DurationMS)/1000)}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func failureOf(fs []model.Finding) *junitFailure {
	var kinds, lines []string
	for _, f := range fs {
		kinds = append(kinds, string(f.Kind))
		lines = append(lines, fmt.Sprintf("%s: %s", f.Kind, f.Message))
	}
	return &junitFailure{Message: fs[0].Message, Type: strings.Join(kinds, ","), Text: strings.Join(lines, "\n")}
}
