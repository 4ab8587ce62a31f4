package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Served is one of several manifests an instance serves (probe.manifest.paths): the URL path
// it is served at and the SHA-256 (hex) of its bytes.
type Served struct {
	Path   string
	SHA256 string
}

// CombinedSHA256 identifies the manifests an instance serves at several paths, in the order
// the paths are configured: the SHA-256 of one "PATH SHA256" line per manifest. Two instances
// (or an instance and a release record) hash the same exactly when every path serves the same
// bytes. The prober and the registry both compute manifest_sha256 with it.
func CombinedSHA256(parts []Served) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Path)
		b.WriteByte(' ')
		b.WriteString(p.SHA256)
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Union merges the asset lists of several manifests into one: sorted by Ref, each Ref once,
// keeping the first non-empty integrity in the lists' order (as within one manifest). Its
// AssetsSHA256 is the assets_sha256 of an instance serving those manifests.
func Union(lists ...[]model.Asset) []model.Asset {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	all := make([]model.Asset, 0, n)
	for _, l := range lists {
		all = append(all, l...)
	}
	return uniqueAssets(all)
}
