package config

import (
	"bytes"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// A fleet.static list of thousands of entries, decoded as part of one document, becomes one
// yaml.Node tree of the whole file: about 0.8 KiB per entry, all alive at once, several
// times the entries themselves. splitStatic cuts the list out of the document and
// decodeStatic decodes it a few hundred entries at a time, so the tree alive at any moment
// is that of one chunk. The cut is taken only when the document is plain block style where
// the list stands; anything this reading is unsure of (flow style, anchors across chunks,
// a count of entries that differs from the parser's) sends the whole file down the ordinary
// path, which gives the same configuration and the same error messages.

// staticChunk is how many fleet.static entries are decoded at once.
const staticChunk = 256

// staticList is the block sequence under fleet.static, located in the document's lines.
type staticList struct {
	keyLine int   // 0-based index of the "static:" line
	start   int   // byte offset where the sequence's first line starts
	end     int   // byte offset just past its last line
	items   []int // byte offset of the line where each entry starts
	lines   []int // 0-based line index of each entry's first line
}

// splitStatic finds the fleet.static block sequence of a block-style document. ok is false
// when the document is not in the shape this reading is sure of.
func splitStatic(data []byte) (l staticList, ok bool) {
	type line struct {
		off, indent int
		text        []byte // without indentation and line break
	}
	var lines []line
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := off + end + 1
		if end < 0 {
			end, next = len(data)-off, len(data)
		}
		raw := bytes.TrimSuffix(data[off:off+end], []byte("\r"))
		text := bytes.TrimLeft(raw, " ")
		lines = append(lines, line{off: off, indent: len(raw) - len(text), text: text})
		off = next
	}
	content := func(ln line) bool { return len(ln.text) > 0 && ln.text[0] != '#' }
	isKey := func(text []byte, key string) bool {
		rest, found := bytes.CutPrefix(text, []byte(key+":"))
		rest = bytes.TrimLeft(rest, " ")
		return found && (len(rest) == 0 || rest[0] == '#')
	}
	fleet, static, childIndent := -1, -1, -1
	for i, ln := range lines {
		if ln.indent == 0 && (bytes.HasPrefix(ln.text, []byte("---")) || bytes.HasPrefix(ln.text, []byte("..."))) {
			return l, false // several documents, or a marker this reading does not follow
		}
		if !content(ln) || static >= 0 {
			continue
		}
		switch {
		case ln.indent == 0 && fleet >= 0:
			return l, false // fleet has no static list, or it is not in block style
		case ln.indent == 0:
			if isKey(ln.text, "fleet") {
				fleet = i
			}
		case fleet >= 0 && childIndent < 0:
			childIndent = ln.indent
			fallthrough
		case fleet >= 0 && ln.indent == childIndent && isKey(ln.text, "static"):
			if isKey(ln.text, "static") {
				static = i
			}
		}
	}
	if static < 0 {
		return l, false
	}
	l.keyLine = static
	seqIndent := -1
	for i := static + 1; i < len(lines); i++ {
		ln := lines[i]
		if !content(ln) {
			continue
		}
		if bytes.ContainsAny(ln.text, "\t&*!|>%") {
			return l, false // tabs, anchors, aliases, tags, block scalars: left to the parser
		}
		item := ln.text[0] == '-' && (len(ln.text) == 1 || ln.text[1] == ' ')
		if seqIndent < 0 {
			if !item || ln.indent < childIndent {
				return l, false // not a block sequence
			}
			seqIndent = ln.indent
			l.start = ln.off
		}
		if ln.indent < seqIndent || ln.indent == seqIndent && !item {
			break
		}
		if ln.indent == seqIndent {
			l.items = append(l.items, ln.off)
			l.lines = append(l.lines, i)
		}
		l.end = ln.off + len(ln.text) + ln.indent
		if l.end < len(data) && data[l.end] == '\r' {
			l.end++
		}
		if l.end < len(data) {
			l.end++ // the line break
		}
	}
	return l, len(l.items) > 0
}

// staticEntry decodes one entry and records its line; it refuses unknown keys itself, since a
// custom unmarshaller does not inherit the decoder's KnownFields.
type staticEntry struct {
	StaticInstance
}

var staticKeys = yamlKeys(StaticInstance{})

func (e *staticEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &lineError{n.Line, "expected a mapping"}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !staticKeys[n.Content[i].Value] {
			return &lineError{n.Content[i].Line, fmt.Sprintf("unknown key %q", n.Content[i].Value)}
		}
	}
	if err := n.Decode(&e.StaticInstance); err != nil {
		return err
	}
	e.Line = n.Line
	return nil
}

// decodeStatic decodes the entries of l from data, staticChunk at a time, each chunk parsed
// with its line numbers intact. ok is false when any chunk does not decode, or decodes to
// another number of entries than l found.
func decodeStatic(data []byte, l staticList) (out []StaticInstance, ok bool) {
	out = make([]StaticInstance, 0, len(l.items))
	for first := 0; first < len(l.items); first += staticChunk {
		last := min(first+staticChunk, len(l.items))
		end := l.end
		if last < len(l.items) {
			end = l.items[last]
		}
		var chunk []staticEntry
		pad := newlines(l.lines[first])
		text := io.MultiReader(&pad, bytes.NewReader(data[l.items[first]:end]))
		if err := yaml.NewDecoder(text).Decode(&chunk); err != nil || len(chunk) != last-first {
			return nil, false
		}
		for k, e := range chunk {
			if e.Line-1 < l.lines[first+k] {
				return nil, false // an entry starts before the line this reading saw it start
			}
			out = append(out, e.StaticInstance)
		}
	}
	return out, true
}

// blankStatic returns data with the lines of l's sequence blanked (line breaks kept), so the
// rest of the document parses with the same line numbers and fleet.static is null.
func blankStatic(data []byte, l staticList) []byte {
	out := make([]byte, 0, len(data)-(l.end-l.start)+bytes.Count(data[l.start:l.end], []byte("\n")))
	out = append(out, data[:l.start]...)
	for _, b := range data[l.start:l.end] {
		if b == '\n' {
			out = append(out, '\n')
		}
	}
	return append(out, data[l.end:]...)
}

// newlines reads as n line breaks.
type newlines int

func (n *newlines) Read(p []byte) (int, error) {
	if *n <= 0 {
		return 0, io.EOF
	}
	k := min(len(p), int(*n))
	for i := range k {
		p[i] = '\n'
	}
	*n -= newlines(k)
	return k, nil
}
