package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// renderText writes the report for a person: the verdict and the tallies, why the run could
// not verify (when it could not), the release, the groups of instances and the findings. Lists
// of instances are summarised and findings capped per kind, each cut said so with a pointer
// to --output json.
func renderText(w io.Writer, r *model.Report, o Options) error {
	p := palette{o.Color}
	var b strings.Builder
	if o.Quiet {
		fmt.Fprintf(&b, "%s: %d instances, %d ok, %d findings; CDN %s\n", shownVerdict(r), r.Summary.Instances, r.Summary.OK, r.Summary.Findings, cdnCounts(r.CDN))
		if r.Error != "" {
			fmt.Fprintf(&b, "could not verify: %s\n", r.Error)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	s := r.Summary
	fmt.Fprintf(&b, "%s  %d instances: %d ok, %d mismatch, %d unreachable, %d error · CDN: %s · %dms\n",
		p.verdict(shownVerdict(r)), s.Instances, s.OK, s.Mismatch, s.Unreachable, s.Error, cdnCounts(r.CDN), r.DurationMS)
	if r.Error != "" {
		fmt.Fprintf(&b, "%s %s\n", p.red("could not verify:"), r.Error)
	}
	writeRelease(&b, p, r.Release)
	if len(r.Groups) > 0 {
		b.WriteString("\n" + p.bold("groups") + "\n")
		for _, g := range r.Groups {
			mark := p.red("✗ differs        ")
			if g.MatchesRelease {
				mark = p.green("✓ matches release")
			} else if r.Release.AssetsSHA256 == "" && r.Release.ManifestSHA256 == "" {
				mark = p.yellow("? no majority    ")
			}
			fmt.Fprintf(&b, "  #%d %s  %3d instance(s)  manifest %s  assets %s  %s\n", g.ID, mark, len(g.Instances),
				trunc(g.ManifestSHA256, 12), trunc(g.AssetsSHA256, 12), names(g.Instances, o.MaxNames))
		}
	}
	if len(r.Findings) == 0 {
		if r.Verdict != model.VerdictError {
			line := closing(r)
			if strings.HasPrefix(line, "no findings:") {
				line = p.green(line)
			} else {
				line = p.yellow(line)
			}
			b.WriteString("\n" + line + "\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	writeFindings(&b, p, r.Findings, o)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRelease(b *strings.Builder, p palette, rel model.Release) {
	name := rel.Version
	if rel.Image != "" {
		name = strings.TrimSpace(rel.Image + " " + paren(rel.Version))
	}
	if name == "" {
		name = "(no release named)"
	}
	fmt.Fprintf(b, "release %s  source %s", p.bold(name), rel.Source)
	if rel.Digest != "" {
		fmt.Fprintf(b, "  digest %s", short(rel.Digest))
	}
	if rel.AssetsSHA256 != "" {
		fmt.Fprintf(b, "  assets %s (%d)", trunc(rel.AssetsSHA256, 12), rel.Assets)
	}
	b.WriteString("\n")
}

// writeFindings prints the findings in the judge's order, at most o.MaxPerKind of a kind, and
// then how many of each kind were left out.
func writeFindings(b *strings.Builder, p palette, fs []model.Finding, o Options) {
	errs, warns := 0, 0
	for _, f := range fs {
		switch f.Severity {
		case model.SeverityError:
			errs++
		case model.SeverityWarning:
			warns++
		}
	}
	fmt.Fprintf(b, "\n%s (%d errors, %d warnings)\n", p.bold("findings"), errs, warns)
	shown := map[model.Kind]int{}
	hidden := map[model.Kind]int{}
	var order []model.Kind
	for _, f := range fs {
		if shown[f.Kind] >= o.MaxPerKind {
			if hidden[f.Kind] == 0 {
				order = append(order, f.Kind)
			}
			hidden[f.Kind]++
			continue
		}
		shown[f.Kind]++
		fmt.Fprintf(b, "  %s %-22s %-14s %s\n", p.severity(f.Severity), f.Kind, who(f), f.Message)
	}
	for _, k := range order {
		fmt.Fprintf(b, "  %s\n", p.dim(fmt.Sprintf("… and %d more %s finding(s) (see --output json)", hidden[k], k)))
	}
}

// who names what a finding is about in one short column.
func who(f model.Finding) string {
	switch {
	case f.Instance != "":
		return f.Instance
	case len(f.Instances) == 1:
		return f.Instances[0]
	case len(f.Instances) > 1:
		return fmt.Sprintf("%d instances", len(f.Instances))
	}
	return "release"
}
