package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
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

// The streamed JSON must be exactly what encoding/json writes for the whole report.
func TestRenderJSONMatchesEncodingJSON(t *testing.T) {
	for _, r := range []*model.Report{incidentReport(), {Schema: model.ReportSchema, Verdict: model.VerdictError, Error: "resolving the release: no such image", Instances: []model.Instance{}, Groups: []model.Group{}, Findings: []model.Finding{}}} {
		var got bytes.Buffer
		if err := RenderJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("streamed JSON differs:\n%s\nwant:\n%s", got.String(), want.String())
		}
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
