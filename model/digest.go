package model

import "strings"

// CanonicalDigest returns the canonical form of a sha256 digest, "sha256:" and 64 lower-case hex
// digits, however it was spelled: "sha256:ABC…", "repo@sha256:…", "docker-pullable://repo@sha256:…"
// or the bare 64 hex digits. ok is false when s holds no sha256 digest.
func CanonicalDigest(s string) (d string, ok bool) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 7 && strings.EqualFold(s[:7], "sha256:") {
		s = s[7:]
	}
	if len(s) != 64 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return "sha256:" + strings.ToLower(s), true
}

// SameDigest reports whether a and b name the same digest in any spelling CanonicalDigest
// accepts. Two values that are not digests are never the same.
func SameDigest(a, b string) bool {
	ca, ok := CanonicalDigest(a)
	if !ok {
		return false
	}
	cb, ok := CanonicalDigest(b)
	return ok && ca == cb
}
