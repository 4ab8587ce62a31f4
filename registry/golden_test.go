package registry_test

import (
	"encoding/json"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/jsonfields"
	"github.com/polygraph-dev/polygraph/model"
)

// The release record's field names and types, as release record writes them and verify reads
// them, are pinned by testdata/record.golden (go test -update rewrites it).
func TestRecordFieldsGolden(t *testing.T) {
	var rec model.ReleaseRecord
	jsonfields.Fill(&rec)
	b, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	jsonfields.Golden(t, "testdata/record.golden", jsonfields.Paths(t, b))
}
