package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/polygraph-dev/polygraph/model"
)

// RenderDiagnosisJSON writes the diagnosis as indented JSON (schema polygraph.diagnosis/v1),
// the full verify report embedded. The report's instances are streamed one at a time, so a
// diagnosis of 10,000 instances is never held whole in memory.
func RenderDiagnosisJSON(w io.Writer, d *model.Diagnosis) error {
	bw := bufio.NewWriter(w)
	head := *d
	head.Report = nil
	before, after, err := dgSplice(&head, "\n  \"report\": null", "")
	if err != nil {
		return err
	}
	bw.Write(before)
	bw.WriteString("\n  \"report\": ")
	if d.Report == nil {
		bw.WriteString("null")
	} else if err := dgReportJSON(bw, d.Report, "  "); err != nil {
		return err
	}
	bw.Write(after)
	bw.WriteString("\n")
	return bw.Flush()
}

// dgReportJSON writes the report indented one level in, its instances one at a time.
func dgReportJSON(w *bufio.Writer, r *model.Report, prefix string) error {
	head := *r
	head.SetInstanceList(nil)
	before, after, err := dgSplice(&head, "\n"+prefix+"  \"instances\": null", prefix)
	if err != nil {
		return err
	}
	w.Write(before)
	w.WriteString("\n" + prefix + "  \"instances\": ")
	if r.Instances == nil {
		w.WriteString("null")
	} else {
		w.WriteString("[")
		for i := range r.NumInstances() {
			in := r.InstanceAt(i)
			b, err := json.MarshalIndent(&in, prefix+"    ", "  ")
			if err != nil {
				return err
			}
			if i > 0 {
				w.WriteString(",")
			}
			w.WriteString("\n" + prefix + "    ")
			w.Write(b)
		}
		if r.NumInstances() > 0 {
			w.WriteString("\n" + prefix + "  ")
		}
		w.WriteString("]")
	}
	w.Write(after)
	return nil
}

// dgSplice marshals v indented and splits it around hole, the field left null to be written
// in its place.
func dgSplice(v any, hole, prefix string) (before, after []byte, err error) {
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		return nil, nil, err
	}
	i := bytes.Index(b, []byte(hole))
	if i < 0 {
		return nil, nil, fmt.Errorf("rendering the diagnosis: no %q field", hole)
	}
	return b[:i], b[i+len(hole):], nil
}
