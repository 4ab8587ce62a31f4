package manifest

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

func TestVerifyIntegrity(t *testing.T) {
	body := []byte("console.log('hello')\n")
	s256 := sha256.Sum256(body)
	s384 := sha512.Sum384(body)
	s512 := sha512.Sum512(body)
	s1 := sha1.Sum(body)
	m5 := md5.Sum(body)
	b64 := base64.StdEncoding.EncodeToString
	sri256, sri384, sri512 := "sha256-"+b64(s256[:]), "sha384-"+b64(s384[:]), "sha512-"+b64(s512[:])
	wrong384 := "sha384-" + b64(make([]byte, 48))
	wrong512 := "sha512-" + b64(make([]byte, 64))
	tests := []struct {
		name      string
		integrity string
		want      string // "" ok, "mismatch", "unusable"
	}{
		{"sha256", sri256, ""},
		{"sha384", sri384, ""},
		{"sha512", sri512, ""},
		{"sha384 with options", sri384 + "?foo", ""},
		{"several, one matches", wrong384 + " " + sri384, ""},
		{"strongest wins: a good sha256 does not save a bad sha512", sri256 + " " + wrong512, "mismatch"},
		{"strongest wins: the good sha512 counts", wrong384 + "  " + sri512, ""},
		{"unknown algorithms are ignored", "md5-" + b64(m5[:]) + " " + sri256, ""},
		{"URL-safe base64", "sha384-" + base64.RawURLEncoding.EncodeToString(s384[:]), ""},
		{"mismatch", wrong384, "mismatch"},
		{"sha1 hex", "sha1:" + hex.EncodeToString(s1[:]), ""},
		{"sha1 hex upper case", "sha1:" + strings.ToUpper(hex.EncodeToString(s1[:])), ""},
		{"sha256 hex", "sha256:" + hex.EncodeToString(s256[:]), ""},
		{"md5 hex", "md5:" + hex.EncodeToString(m5[:]), ""},
		{"md5 20-digit prefix (Mix 5)", "md5:" + hex.EncodeToString(m5[:])[:20], ""},
		{"md5 prefix mismatch", "md5:" + strings.Repeat("0", 20), "mismatch"},
		{"sha1 mismatch", "sha1:" + strings.Repeat("a", 40), "mismatch"},
		{"sha1 too short", "sha1:" + hex.EncodeToString(s1[:])[:20], "unusable"},
		{"md5 too short", "md5:0123456789", "unusable"},
		{"not hex", "sha256:" + strings.Repeat("z", 64), "unusable"},
		{"unknown hex algorithm", "crc32:deadbeef", "unusable"},
		{"empty", "", "unusable"},
		{"only unsupported SRI", "md5-" + b64(m5[:]), "unusable"},
		{"SRI of the wrong length", "sha256-" + b64(s1[:]), "unusable"},
		{"garbage", "sha384-!!!", "unusable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyIntegrity(tt.integrity, body)
			var ie *IntegrityError
			switch tt.want {
			case "":
				if err != nil {
					t.Errorf("got %v", err)
				}
			case "mismatch":
				if !errors.As(err, &ie) {
					t.Errorf("got %v, want *IntegrityError", err)
				}
			case "unusable":
				if !errors.Is(err, ErrNoIntegrity) {
					t.Errorf("got %v, want ErrNoIntegrity", err)
				}
			}
		})
	}
}

func TestNormSRI(t *testing.T) {
	good := "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"
	for in, want := range map[string]string{
		"":                          "",
		"  " + good + "  ":          good,
		"md5-abc " + good:           good,
		good + "\n\t" + good:        good + " " + good,
		"sha384-short":              "",
		"sha256:" + good[7:]:        "",
		"sha512-" + good[7:]:        "",
		"SHA384-" + good[7:]:        "SHA384-" + good[7:],
		"sha384-" + good[7:] + "?x": "sha384-" + good[7:] + "?x",
	} {
		if got := string(normSRI([]byte(in))); got != want {
			t.Errorf("normSRI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAssetsSHA256(t *testing.T) {
	// sha256("/a.js\n/b.css\n"), whatever the order and duplicates.
	want := sha256.Sum256([]byte("/a.js\n/b.css\n"))
	for _, refs := range [][]string{{"/a.js", "/b.css"}, {"/b.css", "/a.js", "/a.js"}, {"/a.js", "/a.js", "/b.css"}} {
		var as []model.Asset
		for _, r := range refs {
			as = append(as, model.Asset{Ref: r, Integrity: "x"})
		}
		if got := AssetsSHA256(as); got != hex.EncodeToString(want[:]) {
			t.Errorf("%v: %s", refs, got)
		}
	}
	if got, empty := AssetsSHA256(nil), sha256.Sum256(nil); got != hex.EncodeToString(empty[:]) {
		t.Errorf("empty: %s", got)
	}
}
