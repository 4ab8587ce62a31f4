package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// parser is implemented by every format, one per file.
type parser interface {
	// format is the name written in probe.manifest.format.
	format() Format
	// detect reports whether in looks like this format. It sees the decoded JSON (in.doc is
	// nil for HTML) and never decodes again.
	detect(in *input) bool
	// parse adds the assets of in to r; an error is an *InvalidError.
	parse(in *input, r *resolver) error
}

// input is a manifest body decoded once, shared by detection and parsing.
type input struct {
	body []byte
	opts Options
	// name is the lower-cased last element of opts.Path ("asset-manifest.json").
	name string
	// doc and root hold the decoded JSON; doc is nil for HTML.
	doc  *jdoc
	root jv
}

// parsers in detection order: the most specific shapes first (see detectOrder).
var parsers []parser

// detectOrder ranks the formats for auto-detection, most specific shape first; the flat
// webpack shape, which many formats also satisfy, comes last.
var detectOrder = []Format{"ngsw", "nextjs", "sprockets", "webpack-assets", "vite", "propshaft", "mix", "parcel", "webpack", "html"}

func register(p parser) {
	parsers = append(parsers, p)
	rank := func(f Format) int {
		for i, o := range detectOrder {
			if o == f {
				return i
			}
		}
		return len(detectOrder)
	}
	sort.SliceStable(parsers, func(i, j int) bool { return rank(parsers[i].format()) < rank(parsers[j].format()) })
}

// Formats lists the supported format names (without "auto").
func Formats() []Format {
	var fs []Format
	for _, p := range parsers {
		fs = append(fs, p.format())
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i] < fs[j] })
	return fs
}

// Known reports whether f names a supported format or auto.
func Known(f Format) bool {
	return f == Auto || f == "" || lookup(f) != nil
}

func lookup(f Format) parser {
	for _, p := range parsers {
		if p.format() == f {
			return p
		}
	}
	return nil
}

// Parse decodes body as a manifest of the given format (Auto detects it). Bytes that are not a
// usable manifest give an *InvalidError. The returned Manifest shares no memory with body.
func Parse(f Format, body []byte, opts Options) (*Manifest, error) {
	if opts.Path == "" {
		opts.Path = "/"
	}
	var p parser
	if f != Auto && f != "" {
		if p = lookup(f); p == nil {
			return nil, fmt.Errorf("unknown manifest format %q (known: %v)", f, Formats())
		}
	}
	body, err := stripBOM(body)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &InvalidError{Format: f, Reason: fmt.Sprintf("empty body (content-type %q)", opts.ContentType)}
	}
	file, _, _ := strings.Cut(opts.Path, "?")
	in := &input{body: body, opts: opts, name: strings.ToLower(path.Base(file))}
	isHTML := looksLikeHTML(body)
	switch {
	case p != nil && p.format() == "html":
		return run(p, in)
	case p == nil && isHTML:
		if strings.HasSuffix(in.name, ".json") || strings.Contains(strings.ToLower(opts.ContentType), "json") {
			return nil, htmlInsteadOfJSON(body, opts)
		}
		return run(lookup("html"), in)
	case isHTML:
		return nil, htmlInsteadOfJSON(body, opts)
	}

	in.doc = getDoc()
	defer in.doc.release()
	in.root, err = in.doc.decode(body)
	if err != nil {
		if first := bytes.TrimLeft(body, " \t\r\n")[0]; first != '{' && first != '[' {
			return nil, &InvalidError{Format: f, Reason: fmt.Sprintf("not JSON (content-type %q, starts %s)", opts.ContentType, snippet(body))}
		}
		return nil, &InvalidError{Format: f, Reason: jsonReason(err, body)}
	}
	if in.root.kind != jObj {
		return nil, &InvalidError{Format: f, Reason: fmt.Sprintf("the JSON is %s, not an object of assets", in.root.kind)}
	}
	if p == nil {
		if p = detect(in); p == nil {
			if in.doc.len(in.root) == 0 {
				return nil, &InvalidError{Reason: "empty JSON object: no assets, and no format to detect"}
			}
			return nil, &InvalidError{Reason: fmt.Sprintf("no known manifest format matches (tried %s; starts %s)", triedFormats(), snippet(body))}
		}
	} else if other := detect(in); other != nil && other != p && !(flatShape[p.format()] && flatShape[other.format()] && p.detect(in)) {
		// A configured format that does not fit: say which one does.
		return nil, &InvalidError{Format: p.format(), Reason: fmt.Sprintf("this looks like a %s manifest; set probe.manifest.format: %s (or auto)", other.format(), other.format())}
	}
	return run(p, in)
}

// flatShape are the formats whose manifests can all be a flat {"name": "path"} object: one of
// them configured explicitly reads a manifest another would detect.
var flatShape = map[Format]bool{"webpack": true, "parcel": true, "mix": true, "propshaft": true}

func detect(in *input) parser {
	for _, p := range parsers {
		if p.format() != "html" && p.detect(in) {
			return p
		}
	}
	return nil
}

func run(p parser, in *input) (*Manifest, error) {
	r := getResolver(in.opts)
	defer r.release()
	if err := p.parse(in, r); err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) && ie.Format == "" {
			ie.Format = p.format()
		}
		return nil, err
	}
	if r.over {
		return nil, &InvalidError{Format: p.format(), Reason: fmt.Sprintf("references more than %d assets (probe.manifest.max_assets)", r.max)}
	}
	m := r.finish()
	if len(m.Assets) > r.max {
		return nil, &InvalidError{Format: p.format(), Reason: fmt.Sprintf("references %d assets, more than %d (probe.manifest.max_assets)", len(m.Assets), r.max)}
	}
	m.Format = p.format()
	if in.doc != nil {
		m.Warnings = append(in.doc.dups, m.Warnings...)
		in.doc.dups = nil
	}
	if len(m.Assets) == 0 {
		// Checking nothing is never a pass: a wrong format, or a manifest whose every entry is
		// skipped, says nothing about the CDN.
		why := "no entries"
		if len(m.Skipped) > 0 {
			why = fmt.Sprintf("%d entries, all skipped (first: %q, %s)", len(m.Skipped), m.Skipped[0].Value, m.Skipped[0].Reason)
		}
		return nil, &InvalidError{Format: p.format(), Reason: "no asset reference could be read from it (" + why + "); is probe.manifest.format right?"}
	}
	return m, nil
}

// triedFormats names the formats auto-detection tries, in order.
func triedFormats() string {
	var names []string
	for _, p := range parsers {
		if p.format() != "html" {
			names = append(names, string(p.format()))
		}
	}
	return strings.Join(names, ", ")
}

func htmlInsteadOfJSON(body []byte, opts Options) error {
	return &InvalidError{Reason: fmt.Sprintf("an HTML page was served where a JSON manifest was expected (content-type %q, starts %s); is an SPA fallback answering for %s?", opts.ContentType, snippet(body), opts.Path)}
}

// stripBOM removes a UTF-8 byte-order mark and rejects UTF-16 and UTF-32 ones.
func stripBOM(body []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return body[3:], nil
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}), bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		return nil, &InvalidError{Reason: "UTF-16 encoded (byte-order mark); manifests must be UTF-8"}
	case bytes.HasPrefix(body, []byte{0, 0, 0xFE, 0xFF}):
		return nil, &InvalidError{Reason: "UTF-32 encoded (byte-order mark); manifests must be UTF-8"}
	}
	if len(body) >= 2 && (body[0] == 0 || body[1] == 0) {
		return nil, &InvalidError{Reason: "NUL bytes at the start: UTF-16 or binary, not a UTF-8 manifest"}
	}
	return body, nil
}

// jsonReason describes a JSON decoding error with the offset and the start of the body.
func jsonReason(err error, body []byte) string {
	return fmt.Sprintf("%v (%d bytes, starts %s)", err, len(body), snippet(body))
}

// nameIs reports whether the manifest file name is one of names.
func (in *input) nameIs(names ...string) bool {
	for _, n := range names {
		if in.name == n {
			return true
		}
	}
	return false
}

// allValues reports whether obj has at least one live member and every one's value
// satisfies ok.
func (in *input) allValues(obj jv, ok func(v jv) bool) bool {
	n := 0
	all := true
	in.doc.each(obj, func(_, v jv) {
		n++
		if all && !ok(v) {
			all = false
		}
	})
	return n > 0 && all
}

// strValues adds every string value of obj resolved against base; other values are skipped.
func (in *input) strValues(obj jv, r *resolver, base string, confine bool) {
	d := in.doc
	d.each(obj, func(k, v jv) {
		if v.kind != jStr {
			r.skipKey(d, k, v)
			return
		}
		r.add(base, confine, d.bytes(v), nil)
	})
}

// strElems adds every string element of arr.
func (in *input) strElems(arr jv, r *resolver, base string, confine bool, what string) {
	d := in.doc
	if arr.kind == jNone || arr.kind == jNull {
		return
	}
	if arr.kind != jArr {
		r.warnf("%s is %s, not a list of paths", what, arr.kind)
		return
	}
	for _, e := range d.members(arr) {
		if e.val.kind != jStr {
			r.skip(what+" element", "value is "+e.val.kind.String()+", not a path")
			continue
		}
		r.add(base, confine, d.bytes(e.val), nil)
	}
}

// prefix returns the base for formats with a conventional prefix: opts.AssetPrefix, or def.
func (in *input) prefix(def string) string {
	p := in.opts.AssetPrefix
	if p == "" {
		return def
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}
