package manifest

import (
	"fmt"
	"path"
	"strings"
)

// Path escaping and confinement: how a value is percent-encoded as a browser would request it,
// and whether a path climbs out of the directory it must stay in.

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
