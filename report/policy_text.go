package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/policy"
)

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiReset  = "\x1b[0m"
)

// renderPolicyText writes one line per finding, file:line:col first (as compilers do, so editors
// jump to it), then the summary.
func renderPolicyText(w io.Writer, r *policy.Report, o Options) error {
	paint := func(code, s string) string {
		if !o.Color {
			return s
		}
		return code + s + ansiReset
	}
	var b strings.Builder
	if !o.Quiet {
		for _, f := range r.Findings {
			sev := string(f.Severity)
			if f.Severity == model.SeverityError {
				sev = paint(ansiRed, sev)
			} else {
				sev = paint(ansiYellow, sev)
			}
			fmt.Fprintf(&b, "%s:%d:%d: %s %s: %s\n", paint(ansiBold, f.File), f.Line, f.Column, sev, f.Rule, f.Message)
			if f.Suggestion != "" {
				fmt.Fprintf(&b, "    %s %s\n", paint(ansiDim, "fix:"), f.Suggestion)
			}
		}
		for _, s := range r.Summary.SkippedFiles {
			fmt.Fprintf(&b, "%s: skipped: %s\n", s.File, s.Reason)
		}
	}
	fmt.Fprintf(&b, "policy %s: %d finding%s in %d image reference%s across %d file%s",
		r.Verdict, len(r.Findings), plural(len(r.Findings)), r.Summary.Images, plural(r.Summary.Images),
		r.Summary.Files, plural(r.Summary.Files))
	if n := len(r.Summary.Skipped); n > 0 {
		fmt.Fprintf(&b, ", %d file%s skipped", n, plural(n))
	}
	if r.Summary.Suppressed > 0 {
		fmt.Fprintf(&b, " (%d suppressed by exceptions)", r.Summary.Suppressed)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
