package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// dgMaxFindings caps the findings listed in the HTML page; the JSON has them all.
const dgMaxFindings = 200

// RenderDiagnosisHTML writes the diagnosis as one self-contained HTML page: inline CSS and
// SVG, no script, and nothing fetched from anywhere (no font, image or style sheet). It shows
// the verdict, a fleet picture (a cell per instance, coloured by group and patterned and
// numbered too, so it reads without colour vision), a launch timeline against the release
// record's time, the causes and the findings. It stays readable from 10 to 10,000 instances.
func RenderDiagnosisHTML(w io.Writer, d *model.Diagnosis) error {
	b := bufio.NewWriter(w)
	r := d.Report
	title := "polygraph diagnose: " + strings.ToUpper(d.Verdict)
	if r.Release.Image != "" {
		title += " · " + r.Release.Image
	}
	fmt.Fprintf(b, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>%s</style>\n</head>\n<body>\n", dgEsc(title), dgCSS)
	fmt.Fprintf(b, "<header><h1><span class=\"verdict v-%s\">%s</span> polygraph diagnose</h1>\n", dgEsc(d.Verdict), dgEsc(strings.ToUpper(d.Verdict)))
	if r.Release.Image != "" {
		fmt.Fprintf(b, "<p class=\"release\">Release <code>%s</code>", dgEsc(r.Release.Image))
		if r.Release.Digest != "" {
			fmt.Fprintf(b, " = <code title=\"%s\">%s</code>", dgEsc(r.Release.Digest), dgEsc(dgShort(r.Release.Digest)))
		}
		if d.RecordedAt != nil {
			fmt.Fprintf(b, ", recorded %s", dgEsc(dgStamp(*d.RecordedAt)))
		}
		b.WriteString("</p>\n")
	}
	fmt.Fprintf(b, "<p class=\"meta\">Checked %s, %s.</p></header>\n<main>\n", dgEsc(r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")), dgCount(r.NumInstances(), "instance"))
	if r.Verdict == model.VerdictError {
		fmt.Fprintf(b, "<section><h2>Could not verify at all</h2><p>%s</p></section>\n</main></body></html>\n", dgEsc(r.Error))
		return b.Flush()
	}

	b.WriteString("<section id=\"wrong\"><h2>What is wrong</h2><ul>\n")
	for _, line := range dgWrong(d) {
		fmt.Fprintf(b, "<li>%s</li>\n", dgEsc(line))
	}
	fmt.Fprintf(b, "</ul><p><strong>Since when:</strong> %s</p></section>\n", dgEsc(dgSince(d)))

	styles := dgStyles(d)
	b.WriteString("<section id=\"fleet\"><h2>Fleet</h2>\n<p class=\"hint\">One cell per instance, grouped by the content it serves. Each group has its own colour, pattern and number.</p>\n")
	dgLegend(b, d, styles)
	dgFleetSVG(b, d, styles)
	b.WriteString("</section>\n")

	b.WriteString("<section id=\"timeline\"><h2>Launch timeline</h2>\n")
	dgTimelineSVG(b, d, styles)
	b.WriteString("</section>\n")

	b.WriteString("<section id=\"causes\"><h2>Likely causes</h2>\n")
	if len(d.Causes) == 0 {
		b.WriteString("<p>None: every instance serves the release and every checked asset exists.</p>\n")
	}
	for _, c := range d.Causes {
		fmt.Fprintf(b, "<article class=\"cause\"><h3><span class=\"kind\">%s</span>%s</h3>\n<p>%s</p>\n", dgEsc(c.Kind), dgEsc(dgGroups(c.Groups)), dgEsc(c.Summary))
		b.WriteString("<h4>Evidence</h4><ul>\n")
		for _, e := range c.Evidence {
			fmt.Fprintf(b, "<li>%s</li>\n", dgEsc(e))
		}
		b.WriteString("</ul>\n")
		if c.NotEnoughEvidence != "" {
			fmt.Fprintf(b, "<p class=\"nee\"><strong>Not enough evidence:</strong> %s</p>\n", dgEsc(c.NotEnoughEvidence))
		}
		b.WriteString("<h4>What to do</h4><ol>\n")
		for _, a := range c.Actions {
			text, cmd, ok := strings.Cut(a, ": aws ")
			if ok {
				fmt.Fprintf(b, "<li>%s:<pre><code>aws %s</code></pre></li>\n", dgEsc(text), dgEsc(cmd))
				continue
			}
			fmt.Fprintf(b, "<li>%s</li>\n", dgEsc(a))
		}
		b.WriteString("</ol></article>\n")
	}
	b.WriteString("</section>\n")

	dgGroupTable(b, d, styles)
	dgFindings(b, r)
	fmt.Fprintf(b, "</main>\n<footer>CDN: %d checked, %d missing, %d unchecked, %d skipped · registry: %d requests, %d of %d tags searched · schema %s</footer>\n</body>\n</html>\n",
		r.CDN.Checked, r.CDN.Missing, dgUnchecked(r), r.CDN.Skipped, d.Registry.Requests, d.Registry.TagsSearched, d.Registry.TagsListed, dgEsc(d.Schema))
	return b.Flush()
}

func dgGroupTable(b *bufio.Writer, d *model.Diagnosis, styles map[int]dgStyle) {
	b.WriteString("<section id=\"groups\"><h2>Groups</h2>\n<table><thead><tr><th>Group</th><th>Instances</th><th>Serves</th><th>Claims</th><th>Launched</th><th>Labels</th><th>Assets missing</th></tr></thead><tbody>\n")
	for _, g := range d.Groups {
		s := styles[g.ID]
		serves := "not the release"
		if g.MatchesRelease {
			serves = "the release"
		}
		a := g.Attribution
		img := "image unknown: in no searched tag"
		if a.Digest != "" {
			img = fmt.Sprintf("%s via %s", dgShort(a.Digest), a.How)
			if len(a.Tags) > 0 {
				img += ", tag " + strings.Join(a.Tags, ", ")
			}
		}
		launched := "unknown"
		if g.LaunchedFirst != nil {
			launched = dgWindow(*g.LaunchedFirst, *g.LaunchedLast)
		}
		var labels []string
		for k, v := range g.Labels {
			if len(v) > 3 {
				labels = append(labels, fmt.Sprintf("%s: %d values", k, len(v)))
				continue
			}
			labels = append(labels, k+"="+strings.Join(v, ","))
		}
		fmt.Fprintf(b, "<tr><td>%s %d</td><td>%d: %s</td><td>%s<br><small>%s</small></td><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>\n",
			dgSwatch(s, 18), g.ID, len(g.Instances), dgEsc(dgNamesN(g.Instances, 10)), dgEsc(serves), dgEsc(img),
			dgEsc(strings.Join(g.ClaimedVersions, ", ")), dgEsc(launched), dgEsc(strings.Join(dgSorted(labels), " ")), g.AssetsMissing)
	}
	if n := len(d.Unreachable); n > 0 {
		fmt.Fprintf(b, "<tr><td>%s ?</td><td>%d: %s</td><td colspan=\"5\">unreachable: what they serve is unknown</td></tr>\n", dgSwatch(styles[0], 18), n, dgEsc(dgNamesN(d.Unreachable, 10)))
	}
	b.WriteString("</tbody></table></section>\n")
}

func dgFindings(b *bufio.Writer, r *model.Report) {
	fmt.Fprintf(b, "<section id=\"findings\"><h2>Findings (%d)</h2>\n", len(r.Findings))
	if len(r.Findings) == 0 {
		b.WriteString("<p>None.</p></section>\n")
		return
	}
	// Findings of one kind about the same instances share a row (24 missing assets of one
	// build are one row that opens on the list), so the table stays readable.
	type row struct {
		f    model.Finding
		who  string
		msgs []string
	}
	var rows []*row
	byKey := map[string]*row{}
	for _, f := range r.Findings {
		who := f.Instance
		if who == "" && len(f.Instances) > 0 {
			who = dgNamesN(f.Instances, 3)
		}
		key := string(f.Kind) + "\x00" + string(f.Severity) + "\x00" + who
		if rw := byKey[key]; rw != nil {
			rw.msgs = append(rw.msgs, f.Message)
			continue
		}
		rw := &row{f: f, who: who, msgs: []string{f.Message}}
		byKey[key] = rw
		rows = append(rows, rw)
	}
	b.WriteString("<table><thead><tr><th>Severity</th><th>Kind</th><th>About</th><th>Message</th></tr></thead><tbody>\n")
	for i, rw := range rows {
		if i == dgMaxFindings {
			fmt.Fprintf(b, "<tr><td colspan=\"4\">… and %d more rows (see --output json)</td></tr>\n", len(rows)-i)
			break
		}
		f := rw.f
		fmt.Fprintf(b, "<tr class=\"s-%s\"><td>%s</td><td>%s</td><td>%s</td><td>", dgEsc(string(f.Severity)), dgEsc(string(f.Severity)), dgEsc(string(f.Kind)), dgEsc(rw.who))
		if len(rw.msgs) == 1 {
			fmt.Fprintf(b, "%s</td></tr>\n", dgEsc(rw.msgs[0]))
			continue
		}
		fmt.Fprintf(b, "<details><summary>%d %s findings</summary><ul>", len(rw.msgs), dgEsc(string(f.Kind)))
		for n, m := range rw.msgs {
			if n == dgMaxFindings {
				fmt.Fprintf(b, "<li>… and %d more (see --output json)</li>", len(rw.msgs)-n)
				break
			}
			fmt.Fprintf(b, "<li>%s</li>", dgEsc(m))
		}
		b.WriteString("</ul></details></td></tr>\n")
	}
	b.WriteString("</tbody></table></section>\n")
}

func dgNamesN(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}

func dgEsc(s string) string { return html.EscapeString(s) }

const dgCSS = `
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--card:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1040px;margin:0 auto;padding:0 20px}
header{padding-top:16px}
h1{font-size:24px;margin:8px 0}
h2{font-size:19px;border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:28px}
h3{font-size:16px;margin:0 0 6px}
h4{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin:10px 0 2px}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#fff;border:1px solid var(--line);padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:700;margin-right:8px}
.v-fail,.v-error{background:#b3261e}.v-warn{background:#8a5a00}.v-pass{background:#1a7f37}
.release,.meta,.hint{color:var(--muted);margin:2px 0}
.cause{background:var(--card);border:1px solid var(--line);border-left:6px solid #b3261e;border-radius:6px;padding:12px 16px;margin:12px 0}
.kind{font-family:ui-monospace,Menlo,Consolas,monospace;background:#fff;border:1px solid var(--line);border-radius:4px;padding:1px 6px}
.nee{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:6px 10px}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;list-style:none;padding:0;margin:8px 0}
.legend li{display:flex;align-items:center;gap:6px}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{border-bottom:1px solid var(--line);text-align:left;padding:5px 6px;vertical-align:top}
tr.s-error td:first-child{color:#b3261e;font-weight:600}
tr.s-warning td:first-child{color:#8a5a00;font-weight:600}
svg{max-width:100%;height:auto;display:block}
svg text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
footer{color:var(--muted);font-size:13px;margin:28px auto 20px;border-top:1px solid var(--line);padding-top:8px}
`
