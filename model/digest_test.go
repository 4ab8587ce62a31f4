package model

import "testing"

func TestCanonicalDigest(t *testing.T) {
	const hex = "4f2a3b7c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809102"
	want := "sha256:" + hex
	for _, tc := range []struct {
		name, in, want string
	}{
		{"canonical", want, want},
		{"repo digest", "registry.example.com/store-web@sha256:" + hex, want},
		{"pullable", "docker-pullable://store-web@sha256:" + hex, want},
		{"bare hex", hex, want},
		{"upper case", "SHA256:" + upper(hex), want},
		{"spaces", "  " + want + "\n", want},
		{"too short", "sha256:abc", ""},
		{"not hex", "sha256:" + hex[:63] + "g", ""},
		{"version string", "v2.31.0", ""},
		{"other algorithm", "sha512:" + hex, ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CanonicalDigest(tc.in)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("CanonicalDigest(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
			}
		})
	}
	if !SameDigest("repo@sha256:"+upper(hex), hex) {
		t.Error("SameDigest: a repo digest in upper case and the bare hex differ")
	}
	if SameDigest("latest", "latest") {
		t.Error("SameDigest: two non-digests are the same")
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
