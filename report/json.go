package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/polygraph-dev/polygraph/model"
)

// RenderJSON writes the report as indented JSON (schema polygraph.report/v1), byte for byte
// what encoding/json writes for the whole report. The three lists that grow with the fleet
// (instances, groups, findings, whose asset findings name every instance concerned) are
// streamed one element at a time through one reused encoder: a report of 10,000 instances is
// never held again as marshalled and then indented bytes.
func RenderJSON(w io.Writer, r *model.Report) error {
	head := *r
	head.SetInstanceList(nil)
	head.Groups, head.Findings = nil, nil
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	ew := &elementWriter{w: bw}
	ew.enc = json.NewEncoder(&ew.buf)
	ew.enc.SetIndent("    ", "  ")
	lists := []struct {
		key   string
		isNil bool
		n     int
		at    func(i int) any
	}{
		{"instances", r.Instances == nil, r.NumInstances(), func(i int) any { in := r.InstanceAt(i); return &in }},
		{"groups", r.Groups == nil, len(r.Groups), func(i int) any { return &r.Groups[i] }},
		{"findings", r.Findings == nil, len(r.Findings), func(i int) any { return &r.Findings[i] }},
	}
	rest := b
	for _, l := range lists {
		hole := []byte("\n  \"" + l.key + "\": null")
		i := bytes.Index(rest, hole)
		if i < 0 {
			return fmt.Errorf("rendering the report: no %s field", l.key)
		}
		bw.Write(rest[:i+len(hole)-len("null")])
		rest = rest[i+len(hole):]
		if l.isNil {
			bw.WriteString("null")
			continue
		}
		bw.WriteByte('[')
		for k := range l.n {
			if k > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n    ")
			if err := ew.write(l.at(k)); err != nil {
				return err
			}
		}
		if l.n > 0 {
			bw.WriteString("\n  ")
		}
		bw.WriteByte(']')
	}
	bw.Write(rest)
	bw.WriteByte('\n')
	return bw.Flush()
}

// elementWriter writes one element of a top-level list, indented as inside the report, through
// one encoder and buffer reused for every element.
type elementWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

func (e *elementWriter) write(v any) error {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	_, err := e.w.Write(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
	return err
}
