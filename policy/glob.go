package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrBadGlob is wrapped by the error Load returns for an exclude glob that does not parse.
var ErrBadGlob = errors.New("invalid exclude glob")

// validGlob checks an exclude glob's syntax, so that a typo is an error rather than a glob
// that silently matches nothing.
func validGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return fmt.Errorf("%w %q: empty", ErrBadGlob, g)
	}
	for _, seg := range strings.Split(strings.Trim(g, "/"), "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%w %q: %w", ErrBadGlob, g, err)
		}
	}
	return nil
}

// pathMatch reports whether the slash-separated path name, or any trailing part of it that
// starts at a directory, matches glob; a glob starting with / matches from the start only.
// Segments match as path.Match, and a ** segment matches any number of segments (none
// included).
func pathMatch(glob, name string) bool {
	name = strings.TrimPrefix(path.Clean(name), "./")
	anchored := strings.HasPrefix(glob, "/")
	pat := strings.Split(strings.Trim(glob, "/"), "/")
	segs := strings.Split(strings.TrimPrefix(name, "/"), "/")
	if anchored {
		return matchSegments(pat, segs)
	}
	for i := range segs {
		if matchSegments(pat, segs[i:]) {
			return true
		}
	}
	return false
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if matchSegments(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
