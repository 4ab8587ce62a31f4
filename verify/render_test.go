package verify

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

func incidentReport() *model.Report {
	return Judge(Input{Release: release(), Observations: []model.Observation{obs("a", "A"), obs("b", "B")}, CDN: cdn("/static/js/main.b.js")})
}

// The streamed JSON must be exactly what encoding/json writes for the whole report.
func TestRenderJSONMatchesEncodingJSON(t *testing.T) {
	lists := incidentReport()
	lists.Groups, lists.Findings = []model.Group{}, nil
	lists.Findings = append(lists.Findings, model.Finding{Kind: model.KindAssetMissing, Instances: []string{"a", "<b>"}, URL: "https://cdn.example.test/a.js?x=1&y=2", Status: 403, Evidence: map[string]string{"k": "v"}})
	for _, r := range []*model.Report{incidentReport(), Judge(Input{}), lists} {
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
		if err := Render(&b, r, tc.format, RenderOptions{}); err != nil {
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
	if err := Render(&bytes.Buffer{}, r, "yaml", RenderOptions{}); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestTextColoursOnlyWhenAsked(t *testing.T) {
	var plain, coloured bytes.Buffer
	Render(&plain, incidentReport(), "text", RenderOptions{})
	Render(&coloured, incidentReport(), "text", RenderOptions{Color: true})
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(coloured.String(), "\x1b[31;1mFAIL") {
		t.Error("colour escapes wrong")
	}
}
