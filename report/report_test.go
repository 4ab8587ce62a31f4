package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// incidentReport is the judge's report of two instances claiming v2, one serving another build
// whose script is missing on the CDN.
func incidentReport() *model.Report {
	return &model.Report{
		Schema: model.ReportSchema, Verdict: model.VerdictFail, DurationMS: 1234,
		StartedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Release:   model.Release{Version: "v2", Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111", ManifestSHA256: "bytes-A", AssetsSHA256: "assets-A", Source: model.SourceRecord},
		Instances: []model.Instance{
			{ID: "a", Address: "a:8080", ReportedVersion: "v2", ManifestSHA256: "bytes-A", AssetsSHA256: "assets-A", Assets: 2, Group: 1, Status: model.StatusOK},
			{ID: "b", Address: "b:8080", ReportedVersion: "v2", ManifestSHA256: "bytes-B", AssetsSHA256: "assets-B", Assets: 2, Group: 2, Status: model.StatusMismatch},
		},
		Groups: []model.Group{
			{ID: 1, Instances: []string{"a"}, ManifestSHA256: "bytes-A", AssetsSHA256: "assets-A", MatchesRelease: true},
			{ID: 2, Instances: []string{"b"}, ManifestSHA256: "bytes-B", AssetsSHA256: "assets-B"},
		},
		CDN: model.CDNSummary{Checked: 4, Missing: 1, Requests: 4},
		Findings: []model.Finding{
			{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: "b", Message: "b claims version v2 (the release) but serves other content"},
			{Kind: model.KindContentMismatch, Severity: model.SeverityError, Instance: "b", Message: "b serves a manifest that differs from the release's (asset sets compared)"},
			{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: []string{"b"}, URL: "https://cdn/static/js/main.b.js", Status: 403, Message: "https://cdn/static/js/main.b.js answers 403: referenced by 1 instance(s) (b)"},
		},
		Summary: model.Summary{Instances: 2, OK: 1, Mismatch: 1, Findings: 3},
	}
}

func TestRenderFormats(t *testing.T) {
	r := incidentReport()
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"text", []string{"FAIL", "version-lie", "b claims version v2"}},
		{"markdown", []string{"## ❌ polygraph verify: fail", "| error | `version-lie` | b |"}},
		{"junit", []string{`<testsuites name="polygraph verify"`, `failures="2"`, `type="version-lie,content-mismatch"`}},
	} {
		var b bytes.Buffer
		if err := Render(&b, r, tc.format, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s output lacks %q:\n%s", tc.format, w, b.String())
			}
		}
		if tc.format == "junit" {
			var v struct{}
			if err := xml.Unmarshal(b.Bytes(), &v); err != nil {
				t.Errorf("junit is not XML: %v", err)
			}
		}
	}
	if err := Render(&bytes.Buffer{}, r, "yaml", Options{}); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestTextColoursOnlyWhenAsked(t *testing.T) {
	var plain, coloured bytes.Buffer
	Render(&plain, incidentReport(), "text", Options{})
	Render(&coloured, incidentReport(), "text", Options{Color: true})
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(coloured.String(), "\x1b[31;1mFAIL") {
		t.Error("colour escapes wrong")
	}
}

// Human output never says every asset exists unless every asset was checked, and always prints
// checked, missing, unchecked and skipped.
func TestHumanOutputClaimsOnlyWhatWasChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		r                    *model.Report
		text, markdown, lack []string
	}{
		"all checked": {
			r:        judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Skipped: 2, IntegrityChecked: 3}}),
			text:     []string{"PASS", "CDN: 10 checked, 0 missing, 0 unchecked, 2 skipped, 3 integrity-checked", "all 10 assets checked exist on the CDN (2 reference(s) outside the CDN skipped)"},
			markdown: []string{"✅ polygraph verify: pass", "| 2 | 0 | 0 | 0 | 0 | 10 | 0 | 0 | 2 |", "all 10 assets checked exist on the CDN"},
		},
		"some unchecked, no finding": {
			r:        judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Unchecked: 4}}),
			text:     []string{"10 checked, 0 missing, 4 unchecked, 0 skipped", "4 asset(s) could not be checked on the CDN: unknown, not missing"},
			markdown: []string{"| 10 | 0 | 4 | 0 |", "4 asset(s) could not be checked on the CDN: unknown, not missing"},
			lack:     []string{"exist on the CDN"},
		},
		"unchecked by finding": {
			r: judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 10, Unchecked: 1},
				Findings: []model.Finding{assetFinding(model.KindAssetUnchecked, model.SeverityWarning, "https://cdn/a.js", "web-1")}}),
			text:     []string{"WARN", "asset-unchecked", "1 unchecked"},
			markdown: []string{"| warning | `asset-unchecked` | web-1 |", "| 10 | 0 | 1 | 0 |"},
			lack:     []string{"exist on the CDN"},
		},
		"nothing checked": {
			r:        judged(&model.Report{Instances: twoInstances()}),
			text:     []string{"0 checked", "no asset was checked on the CDN"},
			markdown: []string{"no asset was checked on the CDN"},
			lack:     []string{"exist on the CDN"},
		},
		"could not verify": {
			r:        judged(&model.Report{Verdict: model.VerdictError, Error: `resolving "store-web:v2": registry unreachable`}),
			text:     []string{"ERROR", `could not verify: resolving "store-web:v2": registry unreachable`},
			markdown: []string{"⛔ polygraph verify: error", `**Could not verify:** resolving "store-web:v2": registry unreachable`},
			lack:     []string{"PASS", "pass", "no findings"},
		},
		"dead CDN": {
			r:        judged(&model.Report{Instances: twoInstances(), Error: "the primary CDN gave no HTTP response", CDN: model.CDNSummary{Checked: 10, Unchecked: 10}}),
			text:     []string{"ERROR", "could not verify: the primary CDN gave no HTTP response", "10 unchecked"},
			markdown: []string{"⛔ polygraph verify: error", "**Could not verify:** the primary CDN gave no HTTP response", "| 10 | 0 | 10 | 0 |"},
			lack:     []string{"PASS", "exist on the CDN"},
		},
	} {
		for format, want := range map[string][]string{"text": tc.text, "markdown": tc.markdown} {
			t.Run(name+"/"+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := Render(&b, tc.r, format, Options{}); err != nil {
					t.Fatal(err)
				}
				out := b.String()
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("lacks %q:\n%s", w, out)
					}
				}
				for _, l := range tc.lack {
					if strings.Contains(out, l) {
						t.Errorf("says %q:\n%s", l, out)
					}
				}
			})
		}
	}
}

// Lists of instances are summarised with a count and a pointer to the JSON report, never cut
// silently.
func TestHumanOutputSummarisesLists(t *testing.T) {
	var ids []string
	for i := 1; i <= 40; i++ {
		ids = append(ids, fmt.Sprintf("web-%d", i))
	}
	r := judged(&model.Report{
		Groups:   []model.Group{{ID: 1, Instances: ids, MatchesRelease: true}},
		CDN:      model.CDNSummary{Checked: 1, Missing: 1},
		Findings: []model.Finding{assetFinding(model.KindAssetMissing, model.SeverityError, "https://cdn/a.js", ids...)},
	})
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := Render(&b, r, format, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "web-1, web-2, web-3 and 37 more (see --output json)") {
			t.Errorf("%s does not summarise the list:\n%s", format, b.String())
		}
	}
	var b bytes.Buffer
	if err := Render(&b, r, "text", Options{MaxNames: 5}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "web-5 and 35 more (see --output json)") || !strings.Contains(b.String(), "40 instances") {
		t.Errorf("MaxNames 5:\n%s", b.String())
	}
}

// Findings beyond the cap per kind are counted, with a pointer to the JSON report.
func TestTextCapsFindingsPerKind(t *testing.T) {
	r := judged(&model.Report{Instances: twoInstances(), CDN: model.CDNSummary{Checked: 30, Missing: 25}})
	for i := 0; i < 25; i++ {
		r.Findings = append(r.Findings, assetFinding(model.KindAssetMissing, model.SeverityError, fmt.Sprintf("https://cdn/%d.js", i), "web-1"))
	}
	r.Findings = append(r.Findings, finding(model.KindCertExpiring, model.SeverityWarning, "web-2"))
	var b bytes.Buffer
	if err := Render(&b, judged(r), "text", Options{MaxPerKind: 20}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "asset-missing  ") != 20 || !strings.Contains(out, "… and 5 more asset-missing finding(s) (see --output json)") || !strings.Contains(out, "cert-expiring") {
		t.Errorf("capping:\n%s", out)
	}
}

func TestTextQuiet(t *testing.T) {
	var b bytes.Buffer
	r := judged(&model.Report{Verdict: model.VerdictError, Error: "no instances found"})
	if err := Render(&b, r, "text", Options{Quiet: true}); err != nil {
		t.Fatal(err)
	}
	want := "error: 0 instances, 0 ok, 0 findings; CDN 0 checked, 0 missing, 0 unchecked, 0 skipped\ncould not verify: no instances found\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
