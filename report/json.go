package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/polygraph-dev/polygraph/model"
)

// RenderJSON writes the report as indented JSON (schema polygraph.report/v1). The instances
// array is streamed one instance at a time: a report of 10,000 instances is never held twice in
// memory (marshalled, then indented).
func RenderJSON(w io.Writer, r *model.Report) error {
	head := *r
	head.Instances = nil
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return err
	}
	const hole = "\n  \"instances\": null"
	i := bytes.Index(b, []byte(hole))
	if i < 0 {
		return fmt.Errorf("rendering the report: no instances field")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(b[:i])
	bw.WriteString("\n  \"instances\": [")
	for k := range r.Instances {
		if k > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		ib, err := json.MarshalIndent(&r.Instances[k], "    ", "  ")
		if err != nil {
			return err
		}
		bw.Write(ib)
	}
	if len(r.Instances) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(b[i+len(hole):])
	bw.WriteByte('\n')
	return bw.Flush()
}
