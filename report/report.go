package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Formats lists the report output formats.
var Formats = []string{"text", "json", "junit", "markdown"}

// Options tune rendering. The zero value renders plain text at the default limits.
type Options struct {
	// Color uses ANSI colours (on a terminal).
	Color bool
	// Quiet prints only the summary line in text output.
	Quiet bool
	// MaxPerKind caps the findings of one kind printed in text and markdown (0: 20); JSON
	// always has them all.
	MaxPerKind int
	// Version is polygraph's version, recorded in SARIF.
	Version string
}

// Render writes the report in the named format.
func Render(w io.Writer, r *model.Report, format string, o Options) error {
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

// list3 names at most three instances, then says how many more there are.
func list3(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
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
