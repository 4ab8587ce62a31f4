package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

func renderText(w io.Writer, r *model.Report, o Options) error {
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
	for _, k := range kindsIn(r.Findings, hidden) {
		fmt.Fprintf(&b, "  %s\n", p.dim(fmt.Sprintf("… and %d more %s finding(s) (see --output json)", hidden[k], k)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kindsIn returns the kinds of m in the order they first appear among the findings (the
// judge's order).
func kindsIn(fs []model.Finding, m map[model.Kind]int) []model.Kind {
	var ks []model.Kind
	seen := map[model.Kind]bool{}
	for _, f := range fs {
		if m[f.Kind] > 0 && !seen[f.Kind] {
			seen[f.Kind] = true
			ks = append(ks, f.Kind)
		}
	}
	return ks
}
