package manifest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// CombinedSHA256 is the SHA-256 of "PATH SHA256\n" lines in the paths' order: a release record
// written by one version and an instance judged by another must keep hashing alike.
func TestCombinedSHA256(t *testing.T) {
	parts := []manifest.Served{{Path: "/app/m.json", SHA256: "aa"}, {Path: "/pages/m.json", SHA256: "bb"}}
	sum := sha256.Sum256([]byte("/app/m.json aa\n/pages/m.json bb\n"))
	if got, want := manifest.CombinedSHA256(parts), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("CombinedSHA256 = %s, want %s", got, want)
	}
	swapped := []manifest.Served{parts[0], {Path: "/pages/m.json", SHA256: "cc"}}
	if manifest.CombinedSHA256(parts) == manifest.CombinedSHA256(swapped) {
		t.Error("a different second manifest hashes the same")
	}
}

func TestUnion(t *testing.T) {
	a := []model.Asset{{Ref: "/a.js"}, {Ref: "/c.js", Integrity: "sha384-c"}}
	b := []model.Asset{{Ref: "/b.js"}, {Ref: "/a.js", Integrity: "sha384-a"}, {Ref: "/c.js", Integrity: "sha384-other"}}
	got := manifest.Union(a, b)
	want := []model.Asset{{Ref: "/a.js", Integrity: "sha384-a"}, {Ref: "/b.js"}, {Ref: "/c.js", Integrity: "sha384-c"}}
	if !slices.Equal(got, want) {
		t.Errorf("Union = %+v, want %+v", got, want)
	}
	if len(a) != 2 || a[0].Integrity != "" {
		t.Errorf("Union changed its input: %+v", a)
	}
}
