package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// The streamed JSON must be exactly what encoding/json writes for the whole report, whatever
// lists are nil, empty or full.
func TestRenderJSONMatchesEncodingJSON(t *testing.T) {
	full := &model.Report{
		Schema: model.ReportSchema, Verdict: model.VerdictFail, StartedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Release:   model.Release{Image: "r/web:v1", Digest: "sha256:1111", Source: model.SourceRecord},
		Instances: []model.Instance{{ID: "a", Address: "127.0.1.1:80", Status: model.StatusOK}, {ID: "<b>", Address: "127.0.1.2:80", Labels: map[string]string{"az": "x"}, Status: model.StatusMismatch}},
		Groups:    []model.Group{{ID: 1, Instances: []string{"a"}, RunningDigests: []string{}}},
		Findings: []model.Finding{
			{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: []string{"a", "<b>"}, URL: "https://cdn.example.test/a.js?x=1&y=2", Status: 403, Evidence: map[string]string{"k": "v"}},
			{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: "<b>", Message: "claims v1 & more"},
		},
	}
	empty := &model.Report{Schema: model.ReportSchema, Verdict: model.VerdictError, Error: "no instances", Instances: []model.Instance{}, Groups: []model.Group{}, Findings: []model.Finding{}}
	nils := &model.Report{Schema: model.ReportSchema}
	for _, r := range []*model.Report{full, empty, nils} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		reports := []*model.Report{r}
		if r.Instances != nil {
			// The same report with its instances built as they are read.
			listed := *r
			listed.SetInstanceList(instanceSlice(r.Instances))
			reports = append(reports, &listed)
		}
		for _, r := range reports {
			var got bytes.Buffer
			if err := RenderJSON(&got, r); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed JSON differs:\n%s\nwant:\n%s", got.String(), want.String())
			}
			var marshalled bytes.Buffer
			enc := json.NewEncoder(&marshalled)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			if marshalled.String() != want.String() {
				t.Errorf("encoding/json writes a listed report differently:\n%s\nwant:\n%s", marshalled.String(), want.String())
			}
		}
	}
}

// instanceSlice is a model.InstanceList over a slice.
type instanceSlice []model.Instance

func (s instanceSlice) Len() int                { return len(s) }
func (s instanceSlice) At(i int) model.Instance { return s[i] }
