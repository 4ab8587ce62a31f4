package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// DiagnosisFormats lists the diagnosis's output formats.
var DiagnosisFormats = []string{"text", "json", "html"}

// DiagnosisOptions tune rendering a diagnosis. The zero value renders plain text.
type DiagnosisOptions struct {
	// Color uses ANSI colours in text (on a terminal). The default is plain text.
	Color bool
}

// RenderDiagnosis writes the diagnosis in the named format: text (the default for ""), json
// or html.
func RenderDiagnosis(w io.Writer, d *model.Diagnosis, format string, o DiagnosisOptions) error {
	switch format {
	case "", "text":
		return RenderDiagnosisText(w, d, o)
	case "json":
		return RenderDiagnosisJSON(w, d)
	case "html":
		return RenderDiagnosisHTML(w, d)
	}
	return fmt.Errorf("unknown diagnosis format %q (want %s)", format, strings.Join(DiagnosisFormats, ", "))
}

// dgLimits keep the text on one screen whatever the fleet's size; --output json has it all.
const (
	dgMaxEvidence = 4   // evidence lines per cause
	dgMaxNames    = 3   // instances named per group
	dgMaxLine     = 400 // characters of an action before it is cut
)

// RenderDiagnosisText writes the diagnosis for a person, top-down: verdict, what is wrong,
// which instances (counted and grouped), since when, the causes and the next steps.
func RenderDiagnosisText(w io.Writer, d *model.Diagnosis, o DiagnosisOptions) error {
	b := bufio.NewWriter(w)
	c := dgColor(o.Color)
	r := d.Report
	fmt.Fprintf(b, "%s %s", c.bold("polygraph diagnose:"), c.verdict(d.Verdict))
	if r.Release.Image != "" {
		fmt.Fprintf(b, "  release %s", r.Release.Image)
	}
	if d.RecordedAt != nil {
		fmt.Fprintf(b, " (recorded %s)", dgStamp(*d.RecordedAt))
	}
	b.WriteString("\n\n")
	if r.Verdict == model.VerdictError {
		fmt.Fprintf(b, "Could not verify at all: %s\n", r.Error)
		return b.Flush()
	}

	fmt.Fprintln(b, c.bold("What is wrong"))
	for _, line := range dgWrong(d) {
		fmt.Fprintf(b, "  %s\n", line)
	}

	fmt.Fprintf(b, "\n%s\n", c.bold(fmt.Sprintf("Instances (%d), grouped by what they serve", r.NumInstances())))
	for _, g := range d.Groups {
		mark := c.red("✗")
		if g.MatchesRelease {
			mark = c.green("✓")
		}
		fmt.Fprintf(b, "  %s group %d  %-13s %s\n", mark, g.ID, dgCount(len(g.Instances), "instance"), dgNames(g.Instances))
		fmt.Fprintf(b, "      %s\n", dgGroupLine(g))
	}
	if len(d.Unreachable) > 0 {
		fmt.Fprintf(b, "  %s unreachable %s %s\n", c.yellow("?"), dgCount(len(d.Unreachable), "instance"), dgNames(d.Unreachable))
	}

	fmt.Fprintf(b, "\n%s\n  %s\n", c.bold("Since when"), dgSince(d))

	fmt.Fprintf(b, "\n%s\n", c.bold("Likely causes"))
	if len(d.Causes) == 0 {
		b.WriteString("  none: every instance serves the release and every checked asset exists\n")
	}
	var actions []string
	for i, cause := range d.Causes {
		fmt.Fprintf(b, "  %d. %s%s: %s\n", i+1, c.bold(cause.Kind), dgGroups(cause.Groups), cause.Summary)
		for n, e := range cause.Evidence {
			if n == dgMaxEvidence {
				fmt.Fprintf(b, "     %s\n", c.dim(fmt.Sprintf("… %d more (see --output json)", len(cause.Evidence)-n)))
				break
			}
			fmt.Fprintf(b, "     %s %s\n", c.dim("·"), e)
		}
		if cause.NotEnoughEvidence != "" {
			fmt.Fprintf(b, "     %s %s\n", c.yellow("not enough evidence:"), cause.NotEnoughEvidence)
		}
		for _, a := range cause.Actions {
			if !dgHas(actions, a) {
				actions = append(actions, a)
			}
		}
	}
	if len(actions) > 0 {
		fmt.Fprintf(b, "\n%s\n", c.bold("Next steps"))
		for i, a := range actions {
			fmt.Fprintf(b, "  %d. %s\n", i+1, dgCut(a))
		}
	}
	cdn := r.CDN
	fmt.Fprintf(b, "\n%s\n", c.dim(fmt.Sprintf("%d findings; CDN: %d checked, %d missing, %d unchecked, %d skipped; registry: %d requests, %d of %d tags searched. Full detail: --output json or html.",
		len(r.Findings), cdn.Checked, cdn.Missing, dgUnchecked(r), cdn.Skipped, d.Registry.Requests, d.Registry.TagsSearched, d.Registry.TagsListed)))
	return b.Flush()
}

// dgWrong says what is wrong in a few lines.
func dgWrong(d *model.Diagnosis) []string {
	r := d.Report
	var off int
	for _, g := range d.Groups {
		if !g.MatchesRelease {
			off += len(g.Instances)
		}
	}
	var out []string
	if off > 0 {
		out = append(out, fmt.Sprintf("%d of %d instances serve other content than the release.", off, r.NumInstances()))
	}
	if n := len(d.Unreachable); n > 0 {
		out = append(out, fmt.Sprintf("%d of %d instances could not be reached: unknown, not wrong.", n, r.NumInstances()))
	}
	if r.CDN.Missing > 0 {
		out = append(out, fmt.Sprintf("%s referenced by served manifests %s missing on the CDN: pages that load them break.", dgCount(r.CDN.Missing, "asset"), dgVerb(r.CDN.Missing, "is", "are")))
	}
	kinds := map[model.Kind]int{}
	for _, f := range r.Findings {
		if f.Severity == model.SeverityError {
			kinds[f.Kind]++
		}
	}
	if n := kinds[model.KindTagMoved]; n > 0 {
		out = append(out, "The release tag now points at another image than the one recorded (tag-moved).")
	}
	if len(out) == 0 {
		if len(r.Findings) == 0 {
			return []string{fmt.Sprintf("Nothing: all %d instances serve the release and every checked asset exists.", r.NumInstances())}
		}
		return []string{fmt.Sprintf("No instance serves other content; %s (see the findings).", dgCount(len(r.Findings), "finding"))}
	}
	return out
}

// dgGroupLine describes a group on one line: claims, image, launch window, labels, assets.
func dgGroupLine(g model.DiagnosisGroup) string {
	var parts []string
	if len(g.ClaimedVersions) > 0 {
		parts = append(parts, "claims "+strings.Join(g.ClaimedVersions, ", "))
	}
	a := g.Attribution
	switch {
	case a.How == model.HowRelease:
		parts = append(parts, "the release "+dgShort(a.Digest))
	case a.Digest != "":
		img := "image " + dgShort(a.Digest)
		if len(a.Tags) > 0 {
			img += " (tag " + strings.Join(a.Tags, ", ") + ")"
		}
		parts = append(parts, img+" by "+a.How)
	default:
		parts = append(parts, "image unknown (in no searched tag)")
	}
	if g.LaunchedFirst != nil {
		parts = append(parts, "launched "+dgWindow(*g.LaunchedFirst, *g.LaunchedLast))
	}
	var keys []string
	for k := range g.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := g.Labels[k]; len(v) <= 3 {
			parts = append(parts, k+" "+strings.Join(v, ","))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %d values", k, len(v)))
		}
	}
	if g.AssetsMissing > 0 {
		parts = append(parts, dgCount(g.AssetsMissing, "asset")+" missing on the CDN")
	}
	return strings.Join(parts, " · ")
}

// dgSince says since when the fleet serves something else: the first launch of a group that is
// not the release, against the release record's time.
func dgSince(d *model.Diagnosis) string {
	var first *time.Time
	var id int
	known := true
	for _, g := range d.Groups {
		if g.MatchesRelease {
			continue
		}
		if g.LaunchedFirst == nil {
			known = false
			continue
		}
		if first == nil || g.LaunchedFirst.Before(*first) {
			first, id = g.LaunchedFirst, g.ID
		}
	}
	rec := ""
	if d.RecordedAt != nil {
		rec = "; the release was recorded " + dgStamp(*d.RecordedAt)
	}
	switch {
	case first != nil:
		s := fmt.Sprintf("%s: the first instance serving other content launched (group %d)%s", dgStamp(*first), id, rec)
		if !known {
			s += "; some groups have no launch times"
		}
		return s
	case !known:
		return "unknown: the fleet source gives no launch times (a static fleet has none)" + rec
	}
	return "nothing serves other content than the release" + rec
}

func dgUnchecked(r *model.Report) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == model.KindAssetUnchecked {
			n++
		}
	}
	return n
}

func dgGroups(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return " (group " + strings.Join(s, ", ") + ")"
}

func dgNames(ids []string) string {
	if len(ids) <= dgMaxNames {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(ids[:dgMaxNames], ", "), len(ids)-dgMaxNames)
}

// dgIDRun is a run of more than dgMaxNames instance IDs separated by spaces or commas.
var dgIDRun = regexp.MustCompile(`(?:i-[0-9a-f]{8,17}[ ,]+){3,}i-[0-9a-f]{8,17}`)

// dgCut keeps an action to a few lines: a long list of instance IDs is shortened and a long
// text cut, each saying where the whole is.
func dgCut(s string) string {
	cut := false
	s = dgIDRun.ReplaceAllStringFunc(s, func(run string) string {
		ids := strings.FieldsFunc(run, func(r rune) bool { return r == ' ' || r == ',' })
		if len(ids) <= dgMaxNames {
			return run
		}
		cut = true
		return fmt.Sprintf("%s … (%d instance IDs)", strings.Join(ids[:dgMaxNames], " "), len(ids))
	})
	if len(s) > dgMaxLine {
		s, cut = s[:dgMaxLine]+" …", true
	}
	if cut {
		s += " (shortened; the ready command is in --output json or html)"
	}
	return s
}

func dgWindow(a, b time.Time) string {
	if a.Equal(b) {
		return dgStamp(a)
	}
	if a.Format("2006-01-02") == b.Format("2006-01-02") {
		return dgStamp(a) + "–" + b.UTC().Format("15:04")
	}
	return dgStamp(a) + " – " + dgStamp(b)
}

func dgStamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func dgShort(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

func dgCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func dgVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dgHas(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// dgColor writes ANSI colours when on.
type dgColor bool

func (c dgColor) wrap(code, s string) string {
	if !c {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (c dgColor) bold(s string) string   { return c.wrap("1", s) }
func (c dgColor) dim(s string) string    { return c.wrap("2", s) }
func (c dgColor) red(s string) string    { return c.wrap("31;1", s) }
func (c dgColor) green(s string) string  { return c.wrap("32", s) }
func (c dgColor) yellow(s string) string { return c.wrap("33", s) }

func (c dgColor) verdict(v string) string {
	switch v {
	case model.VerdictFail, model.VerdictError:
		return c.red(strings.ToUpper(v))
	case model.VerdictWarn:
		return c.yellow(strings.ToUpper(v))
	}
	return c.green(strings.ToUpper(v))
}
