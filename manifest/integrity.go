package manifest

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// ErrNoIntegrity is returned by VerifyIntegrity for an integrity string it cannot check: empty,
// malformed, or naming no supported algorithm. It is "could not check", not a mismatch.
var ErrNoIntegrity = errors.New("no usable integrity value")

// IntegrityError is a mismatch: the bytes do not hash to what the manifest says.
type IntegrityError struct {
	// Algorithm is the algorithm compared (the strongest an SRI value offers).
	Algorithm string
	// Want is the expected digest as the manifest wrote it; Got is the digest of the bytes
	// in the same encoding.
	Want, Got string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("%s mismatch: manifest says %s, content hashes to %s", e.Algorithm, e.Want, e.Got)
}

type algo struct {
	name string
	size int
	rank int
	new  func() hash.Hash
}

var algos = map[string]algo{
	"md5":    {"md5", md5.Size, 0, md5.New},
	"sha1":   {"sha1", sha1.Size, 1, sha1.New},
	"sha256": {"sha256", sha256.Size, 2, sha256.New},
	"sha384": {"sha384", sha512.Size384, 3, sha512.New384},
	"sha512": {"sha512", sha512.Size, 4, sha512.New},
}

// sriAlgos are the algorithms Subresource Integrity allows.
var sriAlgos = map[string]bool{"sha256": true, "sha384": true, "sha512": true}

// VerifyIntegrity checks body against an integrity value in model.Asset form:
//   - SRI ("sha384-<base64>", several space-separated allowed): only the strongest algorithm
//     present counts, and any of its values may match, as browsers do;
//   - "<algo>:<hex>" for md5, sha1, sha256, sha384 and sha512; an md5 of 16 to 31 hex digits
//     is a prefix (Laravel Mix up to 5 writes the first 20).
//
// It returns nil on a match, an *IntegrityError on a mismatch, and an error wrapping
// ErrNoIntegrity when the value cannot be checked. It hashes body once.
func VerifyIntegrity(integrity string, body []byte) error {
	integrity = strings.TrimSpace(integrity)
	if integrity == "" {
		return fmt.Errorf("%w: empty", ErrNoIntegrity)
	}
	if name, hx, ok := strings.Cut(integrity, ":"); ok && !strings.ContainsAny(integrity, " \t") {
		a, known := algos[strings.ToLower(name)]
		if !known {
			return fmt.Errorf("%w: unknown algorithm %q", ErrNoIntegrity, name)
		}
		hx = strings.ToLower(hx)
		if !validHex(hx, a) {
			return fmt.Errorf("%w: %q is not a %s hex digest", ErrNoIntegrity, integrity, a.name)
		}
		h := a.new()
		h.Write(body)
		got := hex.EncodeToString(h.Sum(nil))
		if subtle.ConstantTimeCompare([]byte(got[:len(hx)]), []byte(hx)) == 1 {
			return nil
		}
		return &IntegrityError{Algorithm: a.name, Want: hx, Got: got[:len(hx)]}
	}
	best, wants := strongestSRI(integrity)
	if best.name == "" {
		return fmt.Errorf("%w: %q has no sha256, sha384 or sha512 value", ErrNoIntegrity, integrity)
	}
	h := best.new()
	h.Write(body)
	sum := h.Sum(nil)
	for _, w := range wants {
		if subtle.ConstantTimeCompare(sum, w) == 1 {
			return nil
		}
	}
	return &IntegrityError{Algorithm: best.name, Want: integrity, Got: best.name + "-" + base64.StdEncoding.EncodeToString(sum)}
}

// strongestSRI returns the strongest algorithm of an SRI value and its decoded digests.
func strongestSRI(v string) (algo, [][]byte) {
	var best algo
	var wants [][]byte
	for _, tok := range strings.Fields(v) {
		name, b64, ok := strings.Cut(tok, "-")
		if !ok || !sriAlgos[strings.ToLower(name)] {
			continue
		}
		a := algos[strings.ToLower(name)]
		b64, _, _ = strings.Cut(b64, "?") // options are reserved
		sum, ok := decodeB64(b64, a.size)
		if !ok {
			continue
		}
		switch {
		case best.name == "" || a.rank > best.rank:
			best, wants = a, [][]byte{sum}
		case a.rank == best.rank:
			wants = append(wants, sum)
		}
	}
	return best, wants
}

func decodeB64(s string, size int) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == size {
			return b, true
		}
	}
	return nil, false
}

func validHex(hx string, a algo) bool {
	n := len(hx)
	if n != 2*a.size && !(a.name == "md5" && n >= 16 && n < 2*a.size) {
		return false
	}
	for i := 0; i < n; i++ {
		c := hx[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// normSRI returns an SRI value with only its well-formed sha256/384/512 tokens, single-space
// separated, or nil when none is usable (a malformed value is dropped, never half-checked).
func normSRI(v []byte) []byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil
	}
	fields := bytes.Fields(v)
	out := v[:0:0]
	for _, tok := range fields {
		name, b64, ok := bytes.Cut(tok, []byte("-"))
		if !ok || !sriAlgos[strings.ToLower(string(name))] {
			continue
		}
		b64, _, _ = bytes.Cut(b64, []byte("?"))
		if _, ok := decodeB64(string(b64), algos[strings.ToLower(string(name))].size); !ok {
			continue
		}
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, tok...)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// hexDigest reports whether hx is a full hex digest (or, for md5, a prefix of at least 16
// digits) of the named algorithm.
func hexDigest(name string, hx []byte) bool {
	a, ok := algos[name]
	return ok && validHex(strings.ToLower(string(hx)), a)
}
