package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// renderMarkdown writes the report for a CI job summary ($GITHUB_STEP_SUMMARY): the verdict,
// a table of tallies, the release, and the findings in a table, lists summarised as in text.
func renderMarkdown(w io.Writer, r *model.Report, o Options) error {
	var b strings.Builder
	verdict := shownVerdict(r)
	icon := map[string]string{model.VerdictPass: "✅", model.VerdictWarn: "⚠️", model.VerdictFail: "❌"}[verdict]
	if icon == "" {
		icon = "⛔"
	}
	fmt.Fprintf(&b, "## %s polygraph verify: %s\n\n", icon, verdict)
	if r.Error != "" {
		fmt.Fprintf(&b, "**Could not verify:** %s\n\n", mdEscape(r.Error))
	}
	s := r.Summary
	b.WriteString("| instances | ok | mismatch | unreachable | error | assets checked | missing | unchecked | skipped |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %d |\n\n", s.Instances, s.OK, s.Mismatch, s.Unreachable, s.Error,
		r.CDN.Checked, r.CDN.Missing, r.CDN.Unchecked, r.CDN.Skipped)
	fmt.Fprintf(&b, "Release: `%s` %s (source: %s)\n\n", r.Release.Image, r.Release.Version, r.Release.Source)
	if len(r.Findings) == 0 {
		if r.Verdict != model.VerdictError {
			b.WriteString(mdEscape(closing(r)) + "\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("| severity | kind | instance(s) | message |\n|---|---|---|---|\n")
	shown := map[model.Kind]int{}
	hidden := 0
	for _, f := range r.Findings {
		if shown[f.Kind] >= o.MaxPerKind {
			hidden++
			continue
		}
		shown[f.Kind]++
		about := f.Instance
		if about == "" {
			about = names(f.Instances, o.MaxNames)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", f.Severity, f.Kind, mdEscape(about), mdEscape(f.Message))
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "\n%d more finding(s) in the JSON report (`--output json`).\n", hidden)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }
