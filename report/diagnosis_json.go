package report

import (
	"encoding/json"
	"io"

	"github.com/polygraph-dev/polygraph/model"
)

// RenderDiagnosisJSON writes the diagnosis as indented JSON (schema polygraph.diagnosis/v1),
// the full verify report embedded.
func RenderDiagnosisJSON(w io.Writer, d *model.Diagnosis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}
