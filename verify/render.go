package verify

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Formats lists the report output formats.
var Formats = []string{"text", "json", "junit", "markdown"}

// RenderOptions tune human output.
type RenderOptions struct {
	// Color uses ANSI colours (on a terminal).
	Color bool
	// MaxPerKind caps the findings of one kind printed in text and markdown (0: 20); JSON
	// always has them all.
	MaxPerKind int
}

// Render writes the report in the named format.
func Render(w io.Writer, r *model.Report, format string, o RenderOptions) error {
	if o.MaxPerKind == 0 {
		o.MaxPerKind = 20
	}
	switch format {
	case "", "text":
		return renderText(w, r, o)
	case "json":
		return RenderJSON(w, r)
	case "junit":
		return renderJUnit(w, r)
	case "markdown":
		return renderMarkdown(w, r, o)
	}
	return fmt.Errorf("unknown output format %q (one of %s)", format, strings.Join(Formats, ", "))
}

type palette struct{ on bool }

func (p palette) c(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (p palette) red(s string) string    { return p.c("31;1", s) }
func (p palette) yellow(s string) string { return p.c("33", s) }
func (p palette) green(s string) string  { return p.c("32", s) }
func (p palette) bold(s string) string   { return p.c("1", s) }
func (p palette) dim(s string) string    { return p.c("2", s) }

func (p palette) verdict(v string) string {
	switch v {
	case model.VerdictFail:
		return p.red("FAIL")
	case model.VerdictWarn:
		return p.yellow("WARN")
	}
	return p.green("PASS")
}

func (p palette) severity(s model.Severity) string {
	switch s {
	case model.SeverityError:
		return p.red("ERROR")
	case model.SeverityWarning:
		return p.yellow("WARN ")
	}
	return p.dim("INFO ")
}

func renderText(w io.Writer, r *model.Report, o RenderOptions) error {
	p := palette{o.Color}
	s := r.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %d instances: %d ok, %d mismatch, %d unreachable, %d error · CDN: %d assets checked, %d missing, %d skipped · %dms\n",
		p.verdict(r.Verdict), s.Instances, s.OK, s.Mismatch, s.Unreachable, s.Error, r.CDN.Checked, r.CDN.Missing, r.CDN.Skipped, r.DurationMS)
	rel := r.Release
	name := rel.Version
	if rel.Image != "" {
		name = strings.TrimSpace(rel.Image + " " + paren(rel.Version))
	}
	if name == "" {
		name = "(no release named)"
	}
	fmt.Fprintf(&b, "release %s  source %s", p.bold(name), rel.Source)
	if rel.Digest != "" {
		fmt.Fprintf(&b, "  digest %s", short(rel.Digest))
	}
	if rel.AssetsSHA256 != "" {
		fmt.Fprintf(&b, "  assets %s (%d)", trunc(rel.AssetsSHA256, 12), rel.Assets)
	}
	b.WriteString("\n")
	if len(r.Groups) > 0 {
		b.WriteString("\n" + p.bold("groups") + "\n")
		for _, g := range r.Groups {
			mark := p.red("✗ differs        ")
			if g.MatchesRelease {
				mark = p.green("✓ matches release")
			} else if rel.AssetsSHA256 == "" && rel.ManifestSHA256 == "" {
				mark = p.yellow("? no majority    ")
			}
			fmt.Fprintf(&b, "  #%d %s  %3d instance(s)  manifest %s  assets %s  %s\n", g.ID, mark, len(g.Instances),
				trunc(g.ManifestSHA256, 12), trunc(g.AssetsSHA256, 12), list3(g.Instances))
		}
	}
	if len(r.Findings) == 0 {
		b.WriteString("\n" + p.green("no findings: every instance serves the release, and every asset exists on the CDN") + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	errs, warns := 0, 0
	for _, f := range r.Findings {
		switch f.Severity {
		case model.SeverityError:
			errs++
		case model.SeverityWarning:
			warns++
		}
	}
	fmt.Fprintf(&b, "\n%s (%d errors, %d warnings)\n", p.bold("findings"), errs, warns)
	shown := map[model.Kind]int{}
	hidden := map[model.Kind]int{}
	for _, f := range r.Findings {
		if shown[f.Kind] >= o.MaxPerKind {
			hidden[f.Kind]++
			continue
		}
		shown[f.Kind]++
		who := f.Instance
		switch {
		case who == "" && len(f.Instances) > 0:
			who = fmt.Sprintf("%d instance(s)", len(f.Instances))
		case who == "":
			who = "release"
		}
		fmt.Fprintf(&b, "  %s %-22s %-14s %s\n", p.severity(f.Severity), f.Kind, who, f.Message)
	}
	for _, k := range sortedKinds(hidden) {
		fmt.Fprintf(&b, "  %s\n", p.dim(fmt.Sprintf("… and %d more %s finding(s) (see --output json)", hidden[k], k)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKinds(m map[model.Kind]int) []model.Kind {
	ks := make([]model.Kind, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return kindOrder(ks[i]) < kindOrder(ks[j]) })
	return ks
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func trunc(s string, n int) string {
	if s == "" {
		return "-"
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

func renderMarkdown(w io.Writer, r *model.Report, o RenderOptions) error {
	var b strings.Builder
	icon := map[string]string{model.VerdictPass: "✅", model.VerdictWarn: "⚠️", model.VerdictFail: "❌"}[r.Verdict]
	fmt.Fprintf(&b, "## %s polygraph verify: %s\n\n", icon, r.Verdict)
	s := r.Summary
	fmt.Fprintf(&b, "| instances | ok | mismatch | unreachable | error | assets checked | missing | skipped |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d |\n\n", s.Instances, s.OK, s.Mismatch, s.Unreachable, s.Error, r.CDN.Checked, r.CDN.Missing, r.CDN.Skipped)
	fmt.Fprintf(&b, "Release: `%s` %s (source: %s)\n\n", r.Release.Image, r.Release.Version, r.Release.Source)
	if len(r.Findings) > 0 {
		b.WriteString("| severity | kind | instance(s) | message |\n|---|---|---|---|\n")
		shown := map[model.Kind]int{}
		hidden := 0
		for _, f := range r.Findings {
			if shown[f.Kind] >= o.MaxPerKind {
				hidden++
				continue
			}
			shown[f.Kind]++
			who := f.Instance
			if who == "" {
				who = list3(f.Instances)
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", f.Severity, f.Kind, mdEscape(who), mdEscape(f.Message))
		}
		if hidden > 0 {
			fmt.Fprintf(&b, "\n%d more finding(s) in the JSON report.\n", hidden)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }

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
