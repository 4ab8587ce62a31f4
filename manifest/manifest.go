package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Format names a manifest format, as written in probe.manifest.format.
type Format string

// Auto asks Parse to detect the format.
const Auto Format = "auto"

// Options tell a parser where the manifest was served and how to resolve its paths.
type Options struct {
	// Path is the URL path the manifest was served at ("/asset-manifest.json"); paths relative
	// to the manifest resolve against it. The default is "/".
	Path string
	// AssetPrefix overrides the format's conventional prefix (/assets/, /_next/).
	AssetPrefix string
	// ContentType is the Content-Type the manifest was served with, quoted in errors.
	ContentType string
	// SourceMaps keeps .map files; by default they are skipped.
	SourceMaps bool
	// Scheme completes protocol-relative URLs ("//cdn.example.com/a.js"): the scheme the
	// manifest or page was served with ("http" or "https"). By default they stay
	// protocol-relative, as the manifest gave them.
	Scheme string
	// MaxAssets is the most asset references a manifest may hold; one holding more is an
	// *InvalidError (probe.manifest.max_assets). The default is DefaultMaxAssets.
	MaxAssets int
}

// DefaultMaxAssets is the default of Options.MaxAssets.
const DefaultMaxAssets = 100000

// Skip is a manifest entry that is never requested, with the reason.
type Skip struct {
	Value  string
	Reason string
}

// Manifest is a parsed manifest: the unique assets it references, sorted by Ref.
type Manifest struct {
	Format   Format
	Assets   []model.Asset
	Skipped  []Skip
	Warnings []string
}

// InvalidError reports bytes that are not a usable manifest of the format: an HTML fallback
// page, truncated JSON, the wrong shape. The prober turns it into a manifest-invalid finding.
type InvalidError struct {
	Format Format
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Format == "" || e.Format == Auto {
		return e.Reason
	}
	return fmt.Sprintf("not a %s manifest: %s", e.Format, e.Reason)
}

// AssetsSHA256 is the canonical asset-set hash: the SHA-256 of the sorted unique Refs, one per
// line. Two builds with the same assets hash the same even when their manifest bytes differ.
func AssetsSHA256(assets []model.Asset) string {
	refs := make([]string, 0, len(assets))
	size := 0
	for _, a := range assets {
		refs = append(refs, a.Ref)
		size += len(a.Ref) + 1
	}
	if !sort.StringsAreSorted(refs) {
		sort.Strings(refs)
	}
	buf := make([]byte, 0, size)
	for i, r := range refs {
		if i > 0 && r == refs[i-1] {
			continue
		}
		buf = append(append(buf, r...), '\n')
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// snippet quotes the start of body for error messages.
func snippet(body []byte) string {
	const max = 100
	s := body
	if len(s) > max {
		s = s[:max]
	}
	return fmt.Sprintf("%q", strings.TrimSpace(string(s)))
}

// looksLikeHTML reports whether body starts like an HTML document.
func looksLikeHTML(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '<' {
		return false
	}
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body", "<script", "<meta", "<link", "<title", "<!--"} {
		if strings.HasPrefix(head, p) {
			return true
		}
	}
	return false
}
