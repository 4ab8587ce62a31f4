package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Formats lists the verify report's output formats.
var Formats = []string{"text", "json", "junit", "markdown"}

// Options tune rendering. The zero value renders plain text with the default limits.
type Options struct {
	// Color uses ANSI colours (on a terminal). The default is plain text.
	Color bool
	// Quiet prints only the summary line in text output. The default prints everything.
	Quiet bool
	// FailOn is the --fail-on threshold: in JUnit a finding at or above it is a failure, one
	// below it a skipped test case; "never" makes every finding a skipped test case. The
	// default is error.
	FailOn model.Severity
	// MaxPerKind caps the findings of one kind printed in text and markdown; JSON and JUnit
	// always have them all. The default is 20.
	MaxPerKind int
	// MaxNames caps the instances named in a list in text and markdown; the rest are counted
	// ("and 37 more (see --output json)"). The default is 3.
	MaxNames int
	// Version is polygraph's version, recorded in SARIF. The default records none.
	Version string
}

func (o Options) withDefaults() Options {
	if o.FailOn == "" {
		o.FailOn = model.SeverityError
	}
	if o.MaxPerKind <= 0 {
		o.MaxPerKind = 20
	}
	if o.MaxNames <= 0 {
		o.MaxNames = 3
	}
	return o
}

// Render writes the verify report in the named format: text (the default for ""), json,
// junit or markdown.
func Render(w io.Writer, r *model.Report, format string, o Options) error {
	o = o.withDefaults()
	switch format {
	case "", "text":
		return renderText(w, r, o)
	case "json":
		return RenderJSON(w, r)
	case "junit":
		return renderJUnit(w, r, o)
	case "markdown":
		return renderMarkdown(w, r, o)
	}
	return fmt.Errorf("unknown output format %q (one of %s)", format, strings.Join(Formats, ", "))
}

// shownVerdict is the verdict a person reads: the report's, except that a run that could not
// gather part of its evidence (Error set, exit code 3) and found nothing that fails it reads
// "error", never "pass".
func shownVerdict(r *model.Report) string {
	if r.Error != "" && r.Verdict != model.VerdictFail {
		return model.VerdictError
	}
	return r.Verdict
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
	case model.VerdictPass:
		return p.green("PASS")
	}
	return p.red("ERROR")
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

// names lists at most max instances and counts the rest, pointing at the JSON report, which
// has them all: a list is summarised, never cut silently.
func names(ids []string, max int) string {
	if len(ids) <= max {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more (see --output json)", strings.Join(ids[:max], ", "), len(ids)-max)
}

// cdnCounts is the CDN tally every human format prints: what was checked, missing, could not
// be checked and was skipped, so a reader never takes "no finding" for "all checked".
func cdnCounts(c model.CDNSummary) string {
	s := fmt.Sprintf("%d checked, %d missing, %d unchecked, %d skipped", c.Checked, c.Missing, c.Unchecked, c.Skipped)
	if c.IntegrityChecked > 0 {
		s += fmt.Sprintf(", %d integrity-checked", c.IntegrityChecked)
	}
	return s
}

// assetsAllChecked reports whether every asset referenced was checked: none unchecked, by the
// count or by an asset-unchecked finding, and at least one checked.
func assetsAllChecked(r *model.Report) bool {
	if r.CDN.Checked == 0 || r.CDN.Unchecked > 0 {
		return false
	}
	for _, f := range r.Findings {
		if f.Kind == model.KindAssetUnchecked {
			return false
		}
	}
	return true
}

// closing is the sentence a human format ends with when there is no finding. It claims only
// what was checked: every asset exists only when every asset was checked.
func closing(r *model.Report) string {
	switch {
	case r.Verdict == model.VerdictError:
		return "could not verify: " + r.Error
	case r.Summary.Instances == 0:
		return "no instance was verified"
	case r.CDN.Checked == 0:
		return "no findings about the instances, but no asset was checked on the CDN"
	case r.CDN.Unchecked > 0:
		return fmt.Sprintf("no findings, but %d asset(s) could not be checked on the CDN: unknown, not missing", r.CDN.Unchecked)
	case !assetsAllChecked(r):
		return "no findings, but some assets could not be checked on the CDN: unknown, not missing"
	}
	s := fmt.Sprintf("no findings: every instance serves the release, and all %d assets checked exist on the CDN", r.CDN.Checked)
	if r.CDN.Skipped > 0 {
		s += fmt.Sprintf(" (%d reference(s) outside the CDN skipped)", r.CDN.Skipped)
	}
	return s
}

// short abbreviates a digest.
func short(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
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
