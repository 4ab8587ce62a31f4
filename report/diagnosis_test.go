package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// dgTestDiagnosis is a 50-instance incident: 40 on the release, 6 on a re-pushed rebuild, 3 on
// an older release, 1 unreachable, with EC2 instance IDs.
func dgTestDiagnosis(n int, hostile string) *model.Diagnosis {
	at := time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)
	rec := at.Add(-10 * time.Minute)
	rep := &model.Report{Schema: model.ReportSchema, Verdict: model.VerdictFail, StartedAt: at.Add(8 * time.Hour),
		Release: model.Release{Image: "registry.example.com/store-web:v2.31.0", Digest: "sha256:" + strings.Repeat("a", 64)}}
	d := &model.Diagnosis{Schema: model.DiagnosisSchema, Verdict: model.VerdictFail, Report: rep, RecordedAt: &rec}
	sizes := []int{n * 80 / 100, max(1, n*12/100), max(1, n*6/100)}
	k := 0
	for gi, size := range sizes {
		g := model.DiagnosisGroup{ID: gi + 1, MatchesRelease: gi == 0, Attribution: model.Attribution{How: model.HowRelease, Digest: rep.Release.Digest}, ClaimedVersions: []string{"v2.31.0"},
			Labels: map[string][]string{"az": {"us-east-1a", "us-east-1b"}, "asg": {"store-web-prod"}}}
		for range size {
			k++
			id := fmt.Sprintf("i-%017x", k)
			launched := at.Add(time.Duration(k)*time.Minute + time.Duration(gi)*6*time.Hour)
			g.Instances = append(g.Instances, id)
			rep.Instances = append(rep.Instances, model.Instance{ID: id, LaunchedAt: &launched, Status: model.StatusOK, Labels: map[string]string{"note": hostile}})
		}
		first, last := *rep.Instances[k-size].LaunchedAt, *rep.Instances[k-1].LaunchedAt
		g.LaunchedFirst, g.LaunchedLast = &first, &last
		d.Groups = append(d.Groups, g)
	}
	for k < n {
		k++
		d.Unreachable = append(d.Unreachable, fmt.Sprintf("i-%017x", k))
		rep.Instances = append(rep.Instances, model.Instance{ID: d.Unreachable[len(d.Unreachable)-1], Status: model.StatusUnreachable})
	}
	ids := strings.Join(d.Groups[1].Instances, " ")
	d.Causes = []model.Cause{{Kind: model.CauseTagRePushed, Groups: []int{2}, Summary: "The tag was re-pushed " + hostile,
		Evidence: []string{"one", "two", "three", "four", "five"},
		Actions:  []string{"Replace them: for id in " + ids + "; do aws autoscaling terminate-instance-in-auto-scaling-group --instance-id \"$id\" --no-should-decrement-desired-capacity; done"}}}
	for i := range 40 {
		rep.Findings = append(rep.Findings, model.Finding{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: d.Groups[1].Instances,
			URL: fmt.Sprintf("https://cdn.example.com/a%d.js", i), Message: fmt.Sprintf("https://cdn.example.com/a%d.js answers 403", i)})
	}
	return d
}

func TestDiagnosisTextFitsOneScreen(t *testing.T) {
	var b bytes.Buffer
	if err := RenderDiagnosisText(&b, dgTestDiagnosis(50, "x"), DiagnosisOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if lines := strings.Count(out, "\n"); lines > 40 {
		t.Errorf("%d lines for 50 instances:\n%s", lines, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := strings.Count(line, "i-"); n > 4 {
			t.Errorf("a line names %d instances: %s", n, line)
		}
	}
	for _, want := range []string{"polygraph diagnose: FAIL", "9 of 50 instances serve other content", "(6 instance IDs)", "group 2  6 instances", "… and 37 more", "1 instance", "Since when", "tag-re-pushed (group 2)", "… 1 more (see --output json)", "Next steps"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestDiagnosisHTMLSelfContained(t *testing.T) {
	hostile := `<script>alert(1)</script><img src="https://evil.example/x.png">`
	for _, n := range []int{10, 50, 10000} {
		var b bytes.Buffer
		if err := RenderDiagnosisHTML(&b, dgTestDiagnosis(n, hostile)); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "<img") {
			t.Errorf("%d instances: the page holds a script or image (escaping failed)", n)
		}
		// Nothing is loaded from anywhere: no src, no url() but the page's own patterns, no link
		// but the empty icon.
		for _, tag := range regexp.MustCompile(`<[^>]+>`).FindAllString(page, -1) {
			l := strings.ToLower(tag)
			if strings.Contains(l, " src=") || (strings.Contains(l, " href=") && !strings.Contains(l, `href="data:,"`)) ||
				strings.Contains(l, "url(") && !strings.Contains(l, "url(#") {
				t.Errorf("%d instances: the page loads something: %s", n, tag)
			}
		}
		if strings.Contains(page, "@import") {
			t.Errorf("%d instances: the style sheet imports another", n)
		}
		if !strings.Contains(page, `id="fleet-picture"`) || !strings.Contains(page, `id="launch-timeline"`) || !strings.Contains(page, "release recorded 2021-04-06 08:50 UTC") {
			t.Errorf("%d instances: fleet picture or timeline missing", n)
		}
		cells := strings.Count(page, `class="cell"`) + strings.Count(page, `class="cells"`)
		if n <= 1000 && cells != n {
			t.Errorf("%d instances drawn as %d cells", n, cells)
		}
		if n > 1000 && (cells == 0 || cells > 500 || b.Len() > 1<<20) {
			t.Errorf("%d instances: %d elements, %d bytes", n, cells, b.Len())
		}
		for g := 1; g <= 3; g++ {
			if !strings.Contains(page, fmt.Sprintf(`aria-label="group %d"`, g)) {
				t.Errorf("%d instances: group %d has no labelled swatch", n, g)
			}
		}
	}
}

// The streamed JSON is the diagnosis, exactly as encoding/json writes it.
func TestDiagnosisJSONStreamed(t *testing.T) {
	for _, d := range []*model.Diagnosis{dgTestDiagnosis(50, `<"x">`), {Schema: model.DiagnosisSchema, Report: &model.Report{}}, {Schema: model.DiagnosisSchema}} {
		var got bytes.Buffer
		if err := RenderDiagnosisJSON(&got, d); err != nil {
			t.Fatal(err)
		}
		want, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want)+"\n" {
			t.Errorf("streamed JSON differs from encoding/json:\n%s\nwant:\n%s", got.String(), want)
		}
	}
}
