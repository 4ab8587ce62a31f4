package manifest

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlPage is an index.html: script src, link href (stylesheet, modulepreload, preload,
// prefetch, icons, web manifest), img src/srcset, source src/srcset and import maps, with
// integrity attributes. URLs resolve against the page's path or its <base href>. Comments,
// <template>, <noscript> (raw text with scripting on) and non-JavaScript scripts (ld+json,
// text/template) are ignored; JavaScript is never parsed.
type htmlPage struct{}

func init() { register(htmlPage{}) }

func (htmlPage) format() Format { return "html" }

// detect is never consulted for JSON; HTML is recognised by looksLikeHTML.
func (htmlPage) detect(in *input) bool { return in.doc == nil && looksLikeHTML(in.body) }

var assetRels = map[string]bool{
	"stylesheet": true, "modulepreload": true, "preload": true, "prefetch": true,
	"icon": true, "shortcut": false, "apple-touch-icon": true, "apple-touch-icon-precomposed": true,
	"mask-icon": true, "manifest": true,
}

func (htmlPage) parse(in *input, r *resolver) error {
	doc, err := html.Parse(bytes.NewReader(in.body))
	if err != nil {
		return &InvalidError{Reason: "unparseable HTML: " + err.Error()}
	}
	base := in.opts.Path
	if href, ok := findBase(doc); ok {
		if b := resolveBase(in.opts.Path, r.scheme, href); b != "" {
			base = b
		} else {
			r.warnf("<base href=%q> is not usable; URLs resolve against the page", href)
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Template, atom.Noscript:
				return
			case atom.Script:
				typ := strings.ToLower(strings.TrimSpace(attr(n, "type")))
				switch {
				case typ == "importmap":
					importMap(in, r, base, text(n))
				case jsType(typ):
					if src, ok := attrOK(n, "src"); ok {
						r.add(base, false, []byte(src), normSRI([]byte(attr(n, "integrity"))))
					}
				}
			case atom.Link:
				if href, ok := attrOK(n, "href"); ok && assetLink(attr(n, "rel")) {
					r.add(base, false, []byte(href), normSRI([]byte(attr(n, "integrity"))))
				}
			case atom.Img, atom.Source:
				if src, ok := attrOK(n, "src"); ok {
					r.add(base, false, []byte(src), nil)
				}
				if ss, ok := attrOK(n, "srcset"); ok {
					for _, u := range srcset(ss) {
						r.add(base, false, []byte(u), nil)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return nil
}

func jsType(t string) bool {
	switch t {
	case "", "module", "text/javascript", "application/javascript", "text/ecmascript",
		"application/ecmascript", "application/x-javascript", "text/jsx", "text/babel":
		return true
	}
	return false
}

func assetLink(rel string) bool {
	for _, tok := range strings.Fields(strings.ToLower(rel)) {
		if assetRels[tok] {
			return true
		}
	}
	return false
}

// findBase returns the href of the first <base> element with one, as browsers use it.
func findBase(n *html.Node) (string, bool) {
	if n.Type == html.ElementNode && n.DataAtom == atom.Base {
		if href, ok := attrOK(n, "href"); ok {
			return href, true
		}
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Template {
		return "", false
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if h, ok := findBase(c); ok {
			return h, true
		}
	}
	return "", false
}

// resolveBase resolves a <base href> against the page path; "" when it cannot serve as one.
func resolveBase(page, scheme, href string) string {
	p, err := url.Parse(page)
	if err != nil {
		return ""
	}
	h, err := url.Parse(strings.TrimSpace(strings.ReplaceAll(href, "\\", "/")))
	if err != nil || (h.Scheme != "" && h.Scheme != "http" && h.Scheme != "https") || h.Opaque != "" || h.User != nil {
		return ""
	}
	b := p.ResolveReference(h)
	b.RawQuery, b.Fragment, b.RawFragment, b.ForceQuery = "", "", "", false
	if b.Host != "" && b.Scheme == "" {
		b.Scheme = scheme
	}
	if hasDotSegment(b.Path) {
		return ""
	}
	if b.Host != "" {
		return b.String()
	}
	return b.EscapedPath()
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) []byte {
	var b []byte
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b = append(b, c.Data...)
		}
	}
	return b
}

// srcset returns the URLs of a srcset attribute, following the HTML candidate parsing rules
// (URLs end at whitespace; a trailing comma ends a candidate; descriptors are skipped).
func srcset(s string) []string {
	var out []string
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
	i := 0
	for i < len(s) {
		for i < len(s) && (isSpace(s[i]) || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			break
		}
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		u := s[start:i]
		ended := false
		if strings.HasSuffix(u, ",") {
			u = strings.TrimRight(u, ",")
			ended = true
		}
		if u != "" {
			out = append(out, u)
		}
		if ended {
			continue
		}
		// Skip descriptors up to the next comma outside parentheses.
		depth := 0
		for i < len(s) {
			c := s[i]
			i++
			if c == '(' {
				depth++
			} else if c == ')' && depth > 0 {
				depth--
			} else if c == ',' && depth == 0 {
				break
			}
		}
	}
	return out
}

// importMap adds the URLs of an import map: imports and scopes values, and integrity keys
// (with their integrity). Prefix entries ("lodash/") are directories and are skipped.
func importMap(in *input, r *resolver, base string, body []byte) {
	d := getDoc()
	defer d.release()
	root, err := d.decode(body)
	if err != nil || root.kind != jObj {
		r.warnf("import map is not a JSON object; skipped")
		return
	}
	d.each(d.get(root, "imports"), func(k, v jv) {
		if v.kind == jStr {
			r.add(base, false, d.bytes(v), nil)
		}
	})
	d.each(d.get(root, "scopes"), func(_, scope jv) {
		d.each(scope, func(k, v jv) {
			if v.kind == jStr {
				r.add(base, false, d.bytes(v), nil)
			}
		})
	})
	d.each(d.get(root, "integrity"), func(k, v jv) {
		if v.kind == jStr {
			r.add(base, false, d.bytes(k), normSRI(d.bytes(v)))
		}
	})
}
