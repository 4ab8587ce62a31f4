package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

func renderMarkdown(w io.Writer, r *model.Report, o Options) error {
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
