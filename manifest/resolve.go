package manifest

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/polygraph-dev/polygraph/model"
)

// resolver turns manifest values into canonical refs, collecting skips. Refs and integrity
// strings are appended to one slab that becomes a single string in finish, so a manifest of
// n assets costs one allocation for all its refs, and the result does not pin the body.
type resolver struct {
	opts   Options
	scheme string
	slab   []byte
	spans  []span
	ibuf   []byte
	bases  map[string]*url.URL

	skipped  []skipRec
	warnings []string
	slashes  int // values with backslashes

	max  int  // most unique references accepted (Options.MaxAssets or DefaultMaxAssets)
	over bool // far more than max references were offered: resolving stopped
}

type span struct{ ref, refEnd, integ, integEnd int32 }

// skipRec is a skipped value: in the slab (value == "" and end > off) or a string.
type skipRec struct {
	off, end int32
	value    string
	reason   string
}

var resolverPool = sync.Pool{New: func() any { return &resolver{} }}

func getResolver(opts Options) *resolver {
	r := resolverPool.Get().(*resolver)
	r.opts = opts
	r.max = opts.MaxAssets
	if r.max <= 0 {
		r.max = DefaultMaxAssets
	}
	r.over = false
	r.scheme = strings.ToLower(opts.Scheme)
	if r.scheme != "http" && r.scheme != "https" {
		r.scheme = ""
	}
	return r
}

func (r *resolver) release() {
	if cap(r.slab) > 1<<20 || cap(r.spans) > 1<<16 || cap(r.skipped) > 1<<16 {
		return
	}
	r.slab, r.spans, r.ibuf, r.skipped = r.slab[:0], r.spans[:0], r.ibuf[:0], r.skipped[:0]
	r.warnings, r.slashes = nil, 0
	clear(r.bases)
	resolverPool.Put(r)
}

func (r *resolver) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

func (r *resolver) skip(value, reason string) {
	r.skipped = append(r.skipped, skipRec{value: value, reason: reason})
}

// skipBytes records a skipped value, copied into the slab.
func (r *resolver) skipBytes(value []byte, reason string) {
	off := int32(len(r.slab))
	r.slab = append(r.slab, value...)
	r.skipped = append(r.skipped, skipRec{off: off, end: int32(len(r.slab)), reason: reason})
}

var notAPath = func() (t [jObj + 1]string) {
	for k := range t {
		t[k] = "value is " + jkind(k).String() + ", not a path"
	}
	return
}()

// skipKey records an object member whose value is not a path.
func (r *resolver) skipKey(d *jdoc, k, v jv) {
	r.skipBytes(d.bytes(k), notAPath[v.kind])
}

// integ builds an "<algo>:<hex>" integrity in a scratch buffer valid until the next call.
func (r *resolver) integ(algo string, hex []byte) []byte {
	r.ibuf = append(append(append(r.ibuf[:0], algo...), ':'), hex...)
	return r.ibuf
}

// add resolves value against base (a root-relative path ending in "/" such as "/" or
// "/static/", or an absolute URL) and records the asset, with its integrity (already in
// model.Asset form, or nil), or the reason it is skipped. With confine, a relative value may
// not climb above base with "..".
func (r *resolver) add(base string, confine bool, value, integrity []byte) {
	if len(r.spans) >= 4*r.max {
		// Far past the cap (repeats are allowed for: a Vite chunk lists shared imports again)
		// nothing more is resolved or kept: the manifest is refused whole.
		r.over = true
		return
	}
	start := int32(len(r.slab))
	if fastPath(base, value) {
		if value[0] != '/' {
			r.slab = append(r.slab, base...)
		}
		r.slab = append(r.slab, value...)
	} else {
		ref, reason := r.slow(base, confine, string(value))
		if reason != "" {
			r.skipBytes(value, reason)
			return
		}
		r.slab = append(r.slab, ref...)
	}
	ref := r.slab[start:]
	file := pathOnly(ref)
	reason := ""
	switch {
	case !r.opts.SourceMaps && isSourceMap(file):
		reason = "source map (cdn.check_source_maps is off)"
	case string(ref) == r.opts.Path:
		reason = "the manifest itself"
	}
	if reason != "" {
		r.slab = r.slab[:start]
		r.skipBytes(value, reason)
		return
	}
	sp := span{ref: start, refEnd: int32(len(r.slab))}
	if len(integrity) > 0 {
		sp.integ = sp.refEnd
		r.slab = append(r.slab, integrity...)
		sp.integEnd = int32(len(r.slab))
	}
	r.spans = append(r.spans, sp)
}

// finish builds the Manifest: assets sorted by Ref and unique.
func (r *resolver) finish() *Manifest {
	s := string(r.slab)
	as := make([]model.Asset, len(r.spans))
	for i, sp := range r.spans {
		as[i] = model.Asset{Ref: s[sp.ref:sp.refEnd], Integrity: s[sp.integ:sp.integEnd]}
	}
	var skipped []Skip
	if len(r.skipped) > 0 {
		skipped = make([]Skip, len(r.skipped))
		for i, sk := range r.skipped {
			v := sk.value
			if sk.end > sk.off {
				v = s[sk.off:sk.end]
			}
			skipped[i] = Skip{Value: v, Reason: sk.reason}
		}
	}
	m := &Manifest{Assets: uniqueAssets(as), Skipped: skipped, Warnings: r.warnings}
	if r.slashes > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d path(s) use backslashes; read as / like a browser does", r.slashes))
	}
	return m
}

// uniqueAssets sorts by Ref and drops duplicates, keeping the first non-empty integrity.
func uniqueAssets(as []model.Asset) []model.Asset {
	if !slices.IsSortedFunc(as, cmpRef) {
		slices.SortStableFunc(as, cmpRef)
	}
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
	return slices.Clip(out)
}

func cmpRef(a, b model.Asset) int { return strings.Compare(a.Ref, b.Ref) }

// pathOnly returns ref without its query and fragment.
func pathOnly(ref []byte) []byte {
	for i, c := range ref {
		if c == '?' || c == '#' {
			return ref[:i]
		}
	}
	return ref
}

// isSourceMap reports whether a path (no query) names a source map.
func isSourceMap(p []byte) bool {
	return len(p) > 4 && string(p[len(p)-4:]) == ".map"
}

// safePath marks the bytes a path may hold to be used exactly as written: those net/url
// keeps unchanged, minus '%' (left to url), ':' (could be a scheme) and the delimiters.
var safePath = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~!$&'()*+,;=@/[]" {
		t[c] = true
	}
	return
}()

// fastPath reports whether value resolves against base by plain concatenation: a clean path
// (no dot segments, no escapes, no fragment) that is root-relative, or relative to a clean
// root-relative base. fuzz_test.go checks it agrees with the general path.
func fastPath(base string, v []byte) bool {
	if len(v) == 0 || v[len(v)-1] == '/' {
		return false
	}
	if v[0] == '/' {
		// Root-relative: the base only lends its scheme and host, so it must have none.
		if (len(v) > 1 && v[1] == '/') || !strings.HasPrefix(base, "/") || strings.HasPrefix(base, "//") {
			return false
		}
	} else if !cleanBase(base) {
		return false
	}
	q := -1
	segStart := 0
	for i, c := range v {
		if q >= 0 {
			if c != '?' && !safePath[c] {
				return false
			}
			continue
		}
		if c == '?' {
			if i == 0 || v[i-1] == '/' || dotSeg(v[segStart:i]) {
				return false
			}
			q = i
			continue
		}
		if !safePath[c] {
			return false
		}
		if c == '/' {
			if dotSeg(v[segStart:i]) {
				return false
			}
			segStart = i + 1
		}
	}
	if q < 0 {
		return !dotSeg(v[segStart:])
	}
	return q < len(v)-1
}

func dotSeg(s []byte) bool {
	return (len(s) == 1 && s[0] == '.') || (len(s) == 2 && s[0] == '.' && s[1] == '.')
}

func cleanBase(base string) bool {
	if len(base) == 0 || base[0] != '/' || base[len(base)-1] != '/' || strings.HasPrefix(base, "//") {
		return false
	}
	segStart := 0
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !safePath[c] {
			return false
		}
		if c == '/' {
			if dotSeg([]byte(base[segStart:i])) {
				return false
			}
			segStart = i + 1
		}
	}
	return true
}

// slow resolves any value with net/url. It returns the canonical ref, or a skip reason.
func (r *resolver) slow(base string, confine bool, value string) (ref, reason string) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", "empty path"
	}
	if strings.ContainsRune(v, '\\') {
		r.slashes++
		v = strings.ReplaceAll(v, "\\", "/")
	}
	if len(v) >= 5 && strings.EqualFold(v[:5], "data:") {
		return "", "data: URL"
	}
	u, err := url.Parse(preEscape(v))
	if err != nil {
		return "", "unparseable URL: " + strings.TrimPrefix(err.Error(), "parse ")
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Sprintf("scheme %q is never requested", u.Scheme)
	}
	if u.Opaque != "" {
		return "", "not a hierarchical URL"
	}
	if u.User != nil {
		return "", "userinfo in URL"
	}
	u.Fragment, u.RawFragment = "", ""
	u.RawQuery = escapeQuery(u.RawQuery)
	if u.Scheme != "" || u.Host != "" {
		if u.Scheme == "" {
			u.Scheme = r.scheme // "" keeps the URL protocol-relative
		}
		if u.Host == "" {
			return "", "absolute URL without a host"
		}
		if hasDotSegment(u.Path) {
			return "", "absolute URL with . or .. segments"
		}
		if u.Path == "" || strings.HasSuffix(u.Path, "/") {
			return "", "directory, not a file"
		}
		return u.String(), ""
	}
	if strings.HasPrefix(u.Path, "/") && strings.HasPrefix(base, "/") && !strings.HasPrefix(base, "//") {
		base = "/" // a root-relative value takes nothing from a root-relative base
	}
	b := r.parsedBase(base)
	if b == nil {
		return "", fmt.Sprintf("unusable base %q", base)
	}
	if escapes(b.Path, u.Path, confine) {
		return "", "path escapes its base with .."
	}
	res := b.ResolveReference(u)
	if res.Path == "" || strings.HasSuffix(res.Path, "/") {
		return "", "directory, not a file"
	}
	if res.Host != "" {
		return res.String(), ""
	}
	if strings.HasPrefix(res.Path, "//") {
		return "", "path starts with //, which would read as a host"
	}
	return res.RequestURI(), ""
}

func (r *resolver) parsedBase(base string) *url.URL {
	if b, ok := r.bases[base]; ok {
		return b
	}
	b, err := url.Parse(base)
	if err != nil || b.Opaque != "" || b.User != nil || (b.Scheme != "" && b.Scheme != "http" && b.Scheme != "https") {
		b = nil
	} else {
		if b.Scheme == "" && b.Host != "" {
			b.Scheme = r.scheme
		}
		if b.Scheme != "" && b.Host == "" {
			b = nil
		} else {
			if b.Path == "" {
				b.Path = "/"
			}
			b.RawQuery, b.Fragment, b.RawFragment, b.ForceQuery = "", "", "", false
		}
	}
	if r.bases == nil {
		r.bases = map[string]*url.URL{}
	}
	r.bases[base] = b
	return b
}

// preEscape percent-encodes what a browser would before requesting v (spaces, controls,
// non-ASCII, a few delimiters, and '%' that starts no escape) outside its scheme and
// authority, leaving valid escapes alone, so nothing is encoded twice and net/url keeps the
// rest exactly as written.
func preEscape(v string) string {
	start := 0
	if i := strings.Index(v, "//"); i >= 0 && (i == 0 || (!strings.ContainsAny(v[:i], "/?#") && strings.HasSuffix(v[:i], ":"))) {
		start = i + 2
		if j := strings.IndexAny(v[start:], "/?#"); j >= 0 {
			start += j
		} else {
			return v
		}
	}
	q := strings.IndexByte(v, '?')
	if q < 0 {
		q = len(v)
	}
	need := false
	for i := start; i < len(v); i++ {
		if escapeByte(v, i, q) {
			need = true
			break
		}
	}
	if !need {
		return v
	}
	var sb strings.Builder
	sb.WriteString(v[:start])
	for i := start; i < len(v); i++ {
		if escapeByte(v, i, q) {
			fmt.Fprintf(&sb, "%%%02X", v[i])
		} else {
			sb.WriteByte(v[i])
		}
	}
	return sb.String()
}

// escapeByte reports whether v[i] must be escaped; q is where the query starts, after which a
// stray '%' is left alone as browsers do.
func escapeByte(v string, i, q int) bool {
	c := v[i]
	switch {
	case c <= ' ' || c >= 0x7f:
		return true
	case c == '%':
		return i < q && (i+2 >= len(v) || !isHex(v[i+1]) || !isHex(v[i+2]))
	}
	return strings.IndexByte("\"<>`{}|^", c) >= 0
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// escapeQuery percent-encodes bytes a query may not hold as written (spaces, non-ASCII,
// controls), leaving existing escapes alone so nothing is encoded twice.
func escapeQuery(q string) string {
	need := false
	for i := 0; i < len(q); i++ {
		if c := q[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			need = true
			break
		}
	}
	if !need {
		return q
	}
	var sb strings.Builder
	for i := 0; i < len(q); i++ {
		if c := q[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			fmt.Fprintf(&sb, "%%%02X", c)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// escapes reports whether p (a decoded path), resolved against the directory basePath,
// climbs above the root, or above basePath itself when confine is set.
func escapes(basePath, p string, confine bool) bool {
	if !strings.Contains(p, "..") {
		return false
	}
	depth := 0
	if !strings.HasPrefix(p, "/") && !confine {
		for _, seg := range strings.Split(dirOf(basePath), "/") {
			if seg != "" && seg != "." {
				depth++
			}
		}
	}
	for _, seg := range strings.Split(p, "/") {
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
