package probe

import (
	"net/url"
	"path"
	"strings"
)

// excluded reports whether the asset ref matches one of globs (cdn.exclude): its
// root-relative path (an absolute URL's path, without query or fragment) against each pattern
// as path.Match does, where a "**" segment stands for any number of segments, none included.
func excluded(globs []string, ref string) bool {
	if len(globs) == 0 {
		return false
	}
	p := ref
	if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
		u, err := url.Parse(ref)
		if err != nil {
			return false
		}
		p = u.Path
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, g := range globs {
		if matchSegs(strings.Split(strings.TrimPrefix(g, "/"), "/"), segs) {
			return true
		}
	}
	return false
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
