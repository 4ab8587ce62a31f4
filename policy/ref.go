package policy

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Ref is a parsed image reference.
type Ref struct {
	// Original is the reference as given.
	Original string
	// Repository is the repository, with the registry made explicit (index.docker.io by default).
	Repository name.Repository
	// Tag is the tag written in the reference, "" when there is none (which means latest when
	// there is no digest either).
	Tag string
	// Digest is the digest written in the reference ("sha256:..."), "" when there is none.
	Digest string
}

// ParseRef parses an image reference with go-containerregistry's name package. "repo@sha256:..."
// and "repo:tag@sha256:..." are pinned; "registry:5000/repo" has no tag.
func ParseRef(s string) (Ref, error) {
	if s == "" {
		return Ref{}, fmt.Errorf("parsing image reference: empty")
	}
	if strings.TrimSpace(s) != s {
		return Ref{}, fmt.Errorf("parsing image reference %q: leading or trailing space", s)
	}
	r, err := name.ParseReference(s, name.WithDefaultTag(""))
	if err != nil {
		// ParseReference only says it could not parse; the parser of the form used says why.
		if strings.Contains(s, "@") {
			_, err = name.NewDigest(s)
		} else if _, terr := name.NewTag(s); terr != nil {
			err = terr
		}
		return Ref{}, fmt.Errorf("parsing image reference %q: %w", s, err)
	}
	out := Ref{Original: s, Repository: r.Context()}
	switch v := r.(type) {
	case name.Tag:
		out.Tag = v.TagStr()
	case name.Digest:
		out.Digest = v.DigestStr()
		base, _, _ := strings.Cut(s, "@")
		if t, err := name.NewTag(base, name.WithDefaultTag("")); err == nil {
			out.Tag = t.TagStr()
		}
	}
	return out, nil
}

// Pinned reports whether the reference carries a digest.
func (r Ref) Pinned() bool { return r.Digest != "" }

// Latest reports whether the reference means the latest tag, explicitly or implicitly, without a
// digest.
func (r Ref) Latest() bool { return !r.Pinned() && (r.Tag == "" || r.Tag == "latest") }

// Registry returns the registry host as people write it: docker.io for Docker Hub.
func (r Ref) Registry() string {
	reg := r.Repository.RegistryStr()
	if reg == name.DefaultRegistry {
		return "docker.io"
	}
	return reg
}

// TagRef returns the reference to the tag (the tag implied when none is written), without digest.
func (r Ref) TagRef() name.Tag {
	tag := r.Tag
	if tag == "" {
		tag = "latest"
	}
	return r.Repository.Tag(tag)
}

// Names returns the forms an exception pattern is matched against: the reference as written and
// its fully qualified forms (docker.io/library/x:tag and index.docker.io/library/x:tag).
func (r Ref) Names() []string {
	suffix := ""
	if r.Tag != "" {
		suffix = ":" + r.Tag
	}
	if r.Digest != "" {
		suffix += "@" + r.Digest
	}
	repo := r.Repository.RepositoryStr()
	names := []string{r.Original, r.Registry() + "/" + repo + suffix}
	if r.Registry() == "docker.io" {
		names = append(names, name.DefaultRegistry+"/"+repo+suffix)
	}
	if r.Tag == "" && r.Digest == "" {
		names = append(names, r.Original+":latest", r.Registry()+"/"+repo+":latest")
	}
	return names
}

// WithDigest returns the pinned form of the reference: the text as written, with the digest
// appended ("repo:tag@sha256:...").
func (r Ref) WithDigest(digest string) string {
	base, _, _ := strings.Cut(r.Original, "@")
	return base + "@" + digest
}

// globMatch reports whether s matches pattern, where * matches any run of characters (including
// / and :) and ? matches one character.
func globMatch(pattern, s string) bool {
	p, n := []rune(pattern), []rune(s)
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni]):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
