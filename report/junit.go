package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// The JUnit XML that GitLab, Jenkins and most CI servers read: a testsuites root, testsuite
// elements with their counts, time and timestamp, testcase elements holding at most one of
// failure, error or skipped.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// renderJUnit writes one test case per instance (holding the findings about it), one per
// asset finding and one per other fleet or release finding. A test case whose worst finding
// is at or above o.FailOn is a failure, one whose findings are all below it a skipped test
// case with their messages. A run that could not verify at all (exit code 3) has one error test
// case saying why, and its findings are errors, not failures: failures is 0 exactly when the
// exit code is 0 or 3, errors is 0 exactly when it is not 3, so a CI server shows red exactly
// what polygraph fails.
func renderJUnit(w io.Writer, r *model.Report, o Options) error {
	j := junit{unverifiable: r.ExitCode(o.FailOn) == model.ExitUnverifiable, failOn: o.FailOn}
	about := map[string][]model.Finding{}
	var assets, fleet []model.Finding
	for _, f := range r.Findings {
		switch {
		case f.Instance != "":
			about[f.Instance] = append(about[f.Instance], f)
		case f.URL != "" || strings.HasPrefix(string(f.Kind), "asset-"):
			assets = append(assets, f)
		default:
			fleet = append(fleet, f)
		}
	}
	instances := junitSuite{Name: "instances"}
	for i := range r.NumInstances() {
		in := r.InstanceAt(i)
		name := in.ID
		if in.Address != "" && in.Address != in.ID {
			name += " (" + in.Address + ")"
		}
		instances.add(j.testcase(name, "polygraph.instances", about[in.ID]))
	}
	assetSuite := junitSuite{Name: "assets"}
	for _, f := range assets {
		name := string(f.Kind)
		if f.URL != "" {
			name += " " + f.URL
		}
		assetSuite.add(j.testcase(name, "polygraph.assets", []model.Finding{f}))
	}
	if len(assets) == 0 && r.Verdict != model.VerdictError {
		c := junitCase{Name: "assets on the CDN", Classname: "polygraph.assets"}
		if !assetsAllChecked(r) {
			c.Skipped = &junitProblem{Message: closing(r)}
		}
		assetSuite.add(c)
	}
	fleetSuite := junitSuite{Name: "fleet"}
	for _, f := range fleet {
		name := string(f.Kind)
		if len(f.Instances) > 0 {
			name += " " + strings.Join(f.Instances, ", ")
		}
		fleetSuite.add(j.testcase(name, "polygraph.fleet", []model.Finding{f}))
	}
	suites := []junitSuite{instances, assetSuite}
	if len(fleetSuite.Cases) > 0 {
		suites = append(suites, fleetSuite)
	}
	if j.unverifiable {
		run := junitSuite{Name: "run"}
		why := r.Error
		if why == "" {
			why = "the run could not verify"
		}
		run.add(junitCase{Name: "verify", Classname: "polygraph.run", Error: &junitProblem{Message: why, Type: "unverifiable", Text: why}})
		suites = append(suites, run)
	}
	out := junitSuites{Name: "polygraph verify", Time: seconds(r.DurationMS)}
	for i := range suites {
		s := &suites[i]
		// The stages overlap in time: each suite spans the whole run.
		s.Time = seconds(r.DurationMS)
		if !r.StartedAt.IsZero() {
			s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
	}
	out.Suites = suites
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

type junit struct {
	unverifiable bool
	failOn       model.Severity
}

// fails reports whether a finding reaches the threshold ("never" reaches nothing).
func (j junit) fails(f model.Finding) bool {
	return j.failOn.Rank() > 0 && f.Severity.Rank() >= j.failOn.Rank()
}

// testcase is one test case over its findings: passed without any, failed (or, in a run that
// could not verify, in error) when one reaches the threshold, skipped otherwise.
func (j junit) testcase(name, class string, fs []model.Finding) junitCase {
	c := junitCase{Name: name, Classname: class}
	if len(fs) == 0 {
		return c
	}
	var kinds, lines []string
	first := -1
	for i, f := range fs {
		kinds = append(kinds, string(f.Kind))
		lines = append(lines, fmt.Sprintf("%s (%s): %s", f.Kind, f.Severity, f.Message))
		if first < 0 && j.fails(f) {
			first = i
		}
	}
	switch {
	case first >= 0 && j.unverifiable:
		c.Error = &junitProblem{Message: fs[first].Message, Type: strings.Join(kinds, ","), Text: strings.Join(lines, "\n")}
	case first >= 0:
		c.Failure = &junitProblem{Message: fs[first].Message, Type: strings.Join(kinds, ","), Text: strings.Join(lines, "\n")}
	default:
		c.Skipped = &junitProblem{Message: fs[0].Message, Text: strings.Join(lines, "\n")}
	}
	return c
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
