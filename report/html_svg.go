package report

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// dgStyle is how a group is drawn: a colour from the Okabe-Ito palette (told apart by most
// colour-blind readers) and a pattern, so groups differ in more than hue. Group 0 stands for
// the unreachable instances.
type dgStyle struct {
	id      int
	color   string
	pattern int // 0 solid, 1 stripes, 2 dots, 3 crosshatch, 4 bar, 5 column, 6 checker, 7 cross
	label   string
	shape   int // timeline mark: 0 circle, 1 square, 2 triangle, 3 diamond
}

var dgPalette = []string{"#D55E00", "#E69F00", "#CC79A7", "#0072B2", "#56B4E9", "#F0E442"}

func dgStyles(d *model.Diagnosis) map[int]dgStyle {
	out := map[int]dgStyle{0: {id: 0, color: "#8c8c8c", pattern: 7, label: "?", shape: 3}}
	other := 0
	for i, g := range d.Groups {
		s := dgStyle{id: g.ID, label: fmt.Sprint(g.ID), shape: i % 4}
		if g.MatchesRelease {
			s.color, s.pattern = "#009E73", 0
		} else {
			s.color, s.pattern = dgPalette[other%len(dgPalette)], 1+other%6
			other++
		}
		out[g.ID] = s
	}
	return out
}

// dgPattern writes an SVG pattern for a style, tiled every pitch user units from (ox, oy), the
// cell pitch-gap wide.
func dgPattern(b *bufio.Writer, id string, s dgStyle, ox, oy, pitch, gap float64) {
	c := pitch - gap
	fmt.Fprintf(b, `<pattern id="%s" patternUnits="userSpaceOnUse" x="%g" y="%g" width="%g" height="%g"><rect width="%g" height="%g" fill="%s"/>`, id, ox, oy, pitch, pitch, c, c, s.color)
	ink := `stroke="#fff" stroke-width="%g" fill="none"`
	sw := math.Max(1, c/7)
	switch s.pattern {
	case 1:
		fmt.Fprintf(b, `<path d="M0 %g L%g 0 M0 %g L%g 0 M%g %g L%g %g" `+ink+`/>`, c/2, c/2, c, c, c/2, c, c, c/2, sw)
	case 2:
		fmt.Fprintf(b, `<circle cx="%g" cy="%g" r="%g" fill="#fff"/>`, c/2, c/2, c/5)
	case 3:
		fmt.Fprintf(b, `<path d="M0 0 L%g %g M0 %g L%g 0" `+ink+`/>`, c, c, c, c, sw)
	case 4:
		fmt.Fprintf(b, `<rect y="%g" width="%g" height="%g" fill="#fff"/>`, c*3/8, c, c/4)
	case 5:
		fmt.Fprintf(b, `<rect x="%g" width="%g" height="%g" fill="#fff"/>`, c*3/8, c/4, c)
	case 6:
		fmt.Fprintf(b, `<rect width="%g" height="%g" fill="#fff"/><rect x="%g" y="%g" width="%g" height="%g" fill="#fff"/>`, c/2, c/2, c/2, c/2, c/2, c/2)
	case 7:
		fmt.Fprintf(b, `<path d="M%g %g L%g %g M%g %g L%g %g" stroke="#333" stroke-width="%g"/>`, c/5, c/5, c*4/5, c*4/5, c/5, c*4/5, c*4/5, c/5, sw)
	}
	b.WriteString("</pattern>")
}

// dgSwatch is a small self-contained SVG of a style, with its number.
func dgSwatch(s dgStyle, size float64) string {
	var sb strings.Builder
	w := bufio.NewWriter(&sb)
	id := fmt.Sprintf("sw%d-%g", s.id, size)
	fmt.Fprintf(w, `<svg width="%g" height="%g" viewBox="0 0 %g %g" role="img" aria-label="group %s"><defs>`, size, size, size, size, dgEsc(s.label))
	dgPattern(w, id, s, 0, 0, size, 0)
	fmt.Fprintf(w, `</defs><rect width="%g" height="%g" fill="url(#%s)" stroke="#333"/></svg>`, size, size, id)
	w.Flush()
	return sb.String()
}

func dgLegend(b *bufio.Writer, d *model.Diagnosis, styles map[int]dgStyle) {
	b.WriteString(`<ul class="legend">`)
	for _, g := range d.Groups {
		what := "not the release"
		if g.MatchesRelease {
			what = "the release"
		}
		if len(g.Attribution.Tags) > 0 && !g.MatchesRelease {
			what += " (tag " + strings.Join(g.Attribution.Tags, ", ") + ")"
		}
		fmt.Fprintf(b, "<li>%s <span><strong>Group %d</strong> · %s · %s</span></li>", dgSwatch(styles[g.ID], 22), g.ID, dgCount(len(g.Instances), "instance"), dgEsc(what))
	}
	if n := len(d.Unreachable); n > 0 {
		fmt.Fprintf(b, "<li>%s <span><strong>Unreachable</strong> · %s · unknown</span></li>", dgSwatch(styles[0], 22), dgCount(n, "instance"))
	}
	b.WriteString("</ul>\n")
}

// dgFleetSVG draws one cell per instance, each group starting a new row under a label, so the
// picture reads by position and label as well as by colour. Up to 1,000 instances each cell is
// its own element with the instance's name as a tooltip; above, a row's cells of one group are
// one element whose pattern tiles draw the cells.
func dgFleetSVG(b *bufio.Writer, d *model.Diagnosis, styles map[int]dgStyle) {
	type block struct {
		s   dgStyle
		ids []string
	}
	var blocks []block
	n := 0
	for _, g := range d.Groups {
		blocks = append(blocks, block{styles[g.ID], g.Instances})
		n += len(g.Instances)
	}
	if len(d.Unreachable) > 0 {
		blocks = append(blocks, block{styles[0], d.Unreachable})
		n += len(d.Unreachable)
	}
	if n == 0 {
		b.WriteString("<p>No instance.</p>\n")
		return
	}
	cols := int(math.Ceil(math.Sqrt(float64(n) * 2.5)))
	cols = min(max(cols, 10), 120)
	const labelW, gridW = 110.0, 880.0
	pitch := math.Floor(min(32, gridW/float64(cols)))
	gap := math.Max(1, math.Round(pitch/8))
	// A block is at least as tall as its two-line label.
	blockH := func(k int) float64 { return math.Max(float64((k+cols-1)/cols)*pitch, 30) }
	gapY := math.Max(pitch/2, 6)
	height := 4.0
	for _, bl := range blocks {
		height += blockH(len(bl.ids)) + gapY
	}
	width := labelW + float64(cols)*pitch
	fmt.Fprintf(b, `<svg id="fleet-picture" width="%g" height="%g" viewBox="0 0 %g %g" role="img" aria-label="fleet of %d instances in %d groups"><defs>`, width, height, width, height, n, len(d.Groups))
	y := 2.0
	tops := make([]float64, len(blocks))
	for i, bl := range blocks {
		tops[i] = y
		dgPattern(b, fmt.Sprintf("fp%d", bl.s.id), bl.s, labelW, y, pitch, gap)
		y += blockH(len(bl.ids)) + gapY
	}
	b.WriteString("</defs>\n")
	for i, bl := range blocks {
		top := tops[i]
		name := "group " + bl.s.label
		if bl.s.id == 0 {
			name = "unreachable"
		}
		fmt.Fprintf(b, `<text x="0" y="%g" font-weight="600">%s</text><text x="0" y="%g" fill="#57606a">%s</text>`, top+12, dgEsc(name), top+26, dgCount(len(bl.ids), "instance"))
		fill := fmt.Sprintf("url(#fp%d)", bl.s.id)
		if n <= 1000 {
			for k, id := range bl.ids {
				x, cy := labelW+float64(k%cols)*pitch, top+float64(k/cols)*pitch
				fmt.Fprintf(b, `<rect class="cell" x="%g" y="%g" width="%g" height="%g" fill="%s"><title>%s (%s)</title></rect>`, x, cy, pitch-gap, pitch-gap, fill, dgEsc(id), dgEsc(name))
				if pitch >= 22 {
					fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle" font-size="%g" font-weight="700" fill="#000" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`, x+(pitch-gap)/2, cy+(pitch-gap)/2+4, math.Min(13, pitch/2), dgEsc(bl.s.label))
				}
			}
			b.WriteString("\n")
			continue
		}
		for r := 0; r*cols < len(bl.ids); r++ {
			k := min(cols, len(bl.ids)-r*cols)
			fmt.Fprintf(b, `<rect class="cells" x="%g" y="%g" width="%g" height="%g" fill="%s"/>`, labelW, top+float64(r)*pitch, float64(k)*pitch-gap, pitch-gap, fill)
		}
		b.WriteString("\n")
	}
	b.WriteString("</svg>\n")
}

// dgTimelineSVG draws when each group's instances launched, one row per group, against the
// time the release was recorded. Marks closer than a pixel are drawn once.
func dgTimelineSVG(b *bufio.Writer, d *model.Diagnosis, styles map[int]dgStyle) {
	launched := map[string]time.Time{}
	var lo, hi time.Time
	widen := func(t time.Time) {
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	}
	for i := range d.Report.NumInstances() {
		in := d.Report.InstanceAt(i)
		if in.LaunchedAt != nil {
			launched[in.ID] = *in.LaunchedAt
			widen(*in.LaunchedAt)
		}
	}
	if len(launched) == 0 {
		b.WriteString("<p>No launch times: the fleet source gives none (a static fleet has none), so when each group appeared is unknown.</p>\n")
		return
	}
	if d.RecordedAt != nil {
		widen(*d.RecordedAt)
	}
	span := hi.Sub(lo)
	if span <= 0 {
		span = time.Hour
	}
	lo, span = lo.Add(-span/40), span+span/20
	type row struct {
		s   dgStyle
		ids []string
	}
	var rows []row
	for _, g := range d.Groups {
		rows = append(rows, row{styles[g.ID], g.Instances})
	}
	if len(d.Unreachable) > 0 {
		rows = append(rows, row{styles[0], d.Unreachable})
	}
	const left, width, rowH, top = 110.0, 960.0, 30.0, 34.0
	plotW := width - left - 20
	x := func(t time.Time) float64 { return left + float64(t.Sub(lo))/float64(span)*plotW }
	height := top + float64(len(rows))*rowH + 30
	fmt.Fprintf(b, `<svg id="launch-timeline" width="%g" height="%g" viewBox="0 0 %g %g" role="img" aria-label="launch timeline">`, width, height, width, height)
	axisY := top + float64(len(rows))*rowH
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#57606a"/>`, left, axisY, left+plotW, axisY)
	layout := "01-02 15:04"
	if span > 4*24*time.Hour {
		layout = "Jan 02"
	}
	for i := 0; i <= 4; i++ {
		t := lo.Add(span * time.Duration(i) / 4)
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		} else if i == 4 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#57606a"/><text x="%g" y="%g" text-anchor="%s" fill="#57606a">%s</text>`, x(t), axisY, x(t), axisY+5, x(t), axisY+20, anchor, dgEsc(t.UTC().Format(layout)))
	}
	for i, r := range rows {
		cy := top + float64(i)*rowH + rowH/2
		name := "group " + r.s.label
		if r.s.id == 0 {
			name = "unreachable"
		}
		fmt.Fprintf(b, `<text x="0" y="%g">%s</text><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#eaeef2"/>`, cy+4, dgEsc(name), left, cy, left+plotW, cy)
		seen := map[int]bool{}
		for _, id := range r.ids {
			t, ok := launched[id]
			if !ok || seen[int(x(t))] {
				continue
			}
			seen[int(x(t))] = true
			dgMark(b, r.s, x(t), cy, id+" launched "+dgStamp(t))
		}
	}
	if d.RecordedAt != nil {
		rx := x(*d.RecordedAt)
		anchor := "start"
		if rx > left+plotW*0.7 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<line x1="%g" y1="16" x2="%g" y2="%g" stroke="#1b1f24" stroke-width="2" stroke-dasharray="5 4"/><text x="%g" y="12" text-anchor="%s" font-weight="600">release recorded %s</text>`, rx, rx, axisY, rx, anchor, dgEsc(dgStamp(*d.RecordedAt)))
	}
	b.WriteString("</svg>\n")
}

// dgMark draws a timeline mark in the style's colour and shape.
func dgMark(b *bufio.Writer, s dgStyle, x, y float64, title string) {
	const r = 6.0
	attrs := fmt.Sprintf(`fill="%s" stroke="#1b1f24" stroke-width="1"`, s.color)
	switch s.shape {
	case 0:
		fmt.Fprintf(b, `<circle cx="%g" cy="%g" r="%g" %s>`, x, y, r, attrs)
		fmt.Fprintf(b, "<title>%s</title></circle>", dgEsc(title))
	case 1:
		fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" %s>`, x-r, y-r, 2*r, 2*r, attrs)
		fmt.Fprintf(b, "<title>%s</title></rect>", dgEsc(title))
	case 2:
		fmt.Fprintf(b, `<path d="M%g %g L%g %g L%g %g Z" %s>`, x, y-r-1, x+r+1, y+r, x-r-1, y+r, attrs)
		fmt.Fprintf(b, "<title>%s</title></path>", dgEsc(title))
	default:
		fmt.Fprintf(b, `<path d="M%g %g L%g %g L%g %g L%g %g Z" %s>`, x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, attrs)
		fmt.Fprintf(b, "<title>%s</title></path>", dgEsc(title))
	}
}

func dgSorted(xs []string) []string {
	sort.Strings(xs)
	return xs
}
