package manifest

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// parser is implemented by every format, one per file.
type parser interface {
	// format is the name written in probe.manifest.format.
	format() Format
	// detect reports whether body (BOM stripped, not HTML) looks like this format.
	detect(body []byte, opts Options) bool
	// parse decodes body; an error is an *InvalidError.
	parse(body []byte, opts Options) (*Manifest, error)
}

// parsers in detection order: the most specific shapes first.
var parsers []parser

func register(p parser) { parsers = append(parsers, p) }

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
	if f == Auto || f == "" {
		return true
	}
	for _, p := range parsers {
		if p.format() == f {
			return true
		}
	}
	return false
}

// Parse decodes body as a manifest of the given format (Auto detects it). Bytes that are not a
// usable manifest give an *InvalidError.
func Parse(f Format, body []byte, opts Options) (*Manifest, error) {
	if opts.Path == "" {
		opts.Path = "/"
	}
	body, err := stripBOM(body)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &InvalidError{Reason: "empty body"}
	}
	isHTML := looksLikeHTML(body)
	if f == Auto || f == "" {
		p, err := detect(body, isHTML, opts)
		if err != nil {
			return nil, err
		}
		return run(p, body, opts)
	}
	for _, p := range parsers {
		if p.format() == f {
			if isHTML && f != "html" {
				return nil, htmlInsteadOfJSON(body, opts)
			}
			return run(p, body, opts)
		}
	}
	return nil, fmt.Errorf("unknown manifest format %q", f)
}

func run(p parser, body []byte, opts Options) (*Manifest, error) {
	m, err := p.parse(body, opts)
	if err != nil {
		return nil, err
	}
	m.Format = p.format()
	m.Assets = uniqueAssets(m.Assets)
	return m, nil
}

func detect(body []byte, isHTML bool, opts Options) (parser, error) {
	jsonPath := strings.HasSuffix(strings.ToLower(path.Base(opts.Path)), ".json")
	if isHTML {
		if jsonPath {
			return nil, htmlInsteadOfJSON(body, opts)
		}
		for _, p := range parsers {
			if p.format() == "html" {
				return p, nil
			}
		}
	}
	first := bytes.TrimLeft(body, " \t\r\n")
	if first[0] != '{' && first[0] != '[' {
		return nil, &InvalidError{Reason: fmt.Sprintf("not JSON (content-type %q, starts %s)", opts.ContentType, snippet(body))}
	}
	for _, p := range parsers {
		if p.format() != "html" && p.detect(body, opts) {
			return p, nil
		}
	}
	return nil, &InvalidError{Reason: fmt.Sprintf("no known manifest format matches (starts %s)", snippet(body))}
}

func htmlInsteadOfJSON(body []byte, opts Options) error {
	return &InvalidError{Reason: fmt.Sprintf("an HTML page was served where a JSON manifest was expected (content-type %q, starts %s); is an SPA fallback answering for %s?", opts.ContentType, snippet(body), opts.Path)}
}

// stripBOM removes a UTF-8 byte-order mark and rejects UTF-16 ones.
func stripBOM(body []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return body[3:], nil
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}), bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		return nil, &InvalidError{Reason: "UTF-16 encoded (byte-order mark); manifests must be UTF-8"}
	}
	return body, nil
}

// uniqueAssets sorts by Ref and drops duplicates, keeping the first non-empty integrity.
func uniqueAssets(as []model.Asset) []model.Asset {
	sort.SliceStable(as, func(i, j int) bool { return as[i].Ref < as[j].Ref })
	out := as[:0]
	for _, a := range as {
		if n := len(out); n > 0 && out[n-1].Ref == a.Ref {
			if out[n-1].Integrity == "" {
				out[n-1].Integrity = a.Integrity
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// resolver turns manifest values into canonical refs, collecting skips.
type resolver struct {
	opts Options
	m    *Manifest
}

func newResolver(opts Options) *resolver { return &resolver{opts: opts, m: &Manifest{}} }

// add resolves value against base (a root-relative URL path such as "/" or "/static/", or an
// absolute URL) and records the asset or the reason it was skipped.
func (r *resolver) add(base, value, integrity string) {
	ref, reason := resolveRef(base, value)
	if reason == "" && !r.opts.SourceMaps && isSourceMap(ref) {
		reason = "source map (cdn.check_source_maps is off)"
	}
	if reason != "" {
		r.m.Skipped = append(r.m.Skipped, Skip{Value: value, Reason: reason})
		return
	}
	r.m.Assets = append(r.m.Assets, model.Asset{Ref: ref, Integrity: integrity})
}

func isSourceMap(ref string) bool {
	p := ref
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return strings.HasSuffix(p, ".map")
}

// resolveRef resolves value against base. It returns the canonical ref, or a skip reason.
func resolveRef(base, value string) (ref, reason string) {
	v := strings.TrimSpace(value)
	switch {
	case v == "":
		return "", "empty path"
	case strings.ContainsRune(v, '\\'):
		return "", "backslash in path"
	}
	lower := strings.ToLower(v)
	if strings.HasPrefix(lower, "data:") {
		return "", "data: URL"
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Sprintf("unparseable URL: %v", err)
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Sprintf("scheme %q is never requested", u.Scheme)
	}
	if u.User != nil {
		return "", "userinfo in URL"
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Scheme != "" || u.Host != "" {
		if strings.HasSuffix(u.Path, "/") || u.Path == "" {
			return "", "directory, not a file"
		}
		return u.String(), ""
	}
	if escapes(base, u.Path) {
		return "", "path escapes its base with .."
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", fmt.Sprintf("unparseable base %q: %v", base, err)
	}
	res := b.ResolveReference(u)
	if strings.HasSuffix(res.Path, "/") {
		return "", "directory, not a file"
	}
	if res.Scheme != "" || res.Host != "" {
		return res.String(), ""
	}
	return res.RequestURI(), ""
}

// escapes reports whether p, relative to base's path, climbs above the root with "..".
func escapes(base, p string) bool {
	if !strings.Contains(p, "..") {
		return false
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		if u, err := url.Parse(base); err == nil {
			full = path.Dir(u.Path+"x") + "/" + p
		}
	}
	depth := 0
	for _, seg := range strings.Split(full, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// dirOf returns the directory of a URL path, with a trailing slash.
func dirOf(p string) string {
	if p == "" {
		return "/"
	}
	if strings.HasSuffix(p, "/") {
		return p
	}
	d := path.Dir(p)
	if d == "/" || d == "." {
		return "/"
	}
	return d + "/"
}
