package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/jsonfields"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/policy"
)

// The verify report's field names and types, as --output json and --report write them, are
// pinned by testdata/report.golden (go test -update rewrites it).
func TestReportFieldsGolden(t *testing.T) {
	var r model.Report
	jsonfields.Fill(&r)
	var b bytes.Buffer
	if err := RenderJSON(&b, &r); err != nil {
		t.Fatal(err)
	}
	jsonfields.Golden(t, "testdata/report.golden", jsonfields.Paths(t, b.Bytes()))
}

// Likewise the policy report's (policy check --output json).
func TestPolicyReportFieldsGolden(t *testing.T) {
	var r policy.Report
	jsonfields.Fill(&r)
	var b bytes.Buffer
	if err := RenderPolicy(&b, &r, "json", Options{}); err != nil {
		t.Fatal(err)
	}
	jsonfields.Golden(t, "testdata/policy.golden", jsonfields.Paths(t, b.Bytes()))
}

// The golden check itself fails on a renamed field.
func TestGoldenCatchesARename(t *testing.T) {
	var r model.Report
	jsonfields.Fill(&r)
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Replace(b, []byte(`"integrity_checked"`), []byte(`"integrityChecked"`), 1)
	rec := &recorder{TB: t}
	jsonfields.Compare(rec, "testdata/report.golden", jsonfields.Paths(t, renamed))
	if !rec.failed {
		t.Error("a renamed field passed the golden check")
	}
}
