package probe

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// moreManifests fetches the manifests of probe.manifest.paths after the first, whose parse
// first holds, and folds them into obs: the asset set is their union (manifest.Union),
// ManifestSHA256 manifest.CombinedSHA256 of every path with its manifest's hash (so instances
// compare equal only when every manifest is the same, and a release record read from the
// image's files hashes the same), the format every format read. A path that gives no usable
// answer makes the instance unreachable (unknown, not wrong); one that is no usable manifest
// makes it manifest-invalid, naming the path.
func (p *Prober) moreManifests(ctx context.Context, in *instance, obs *model.Observation, first *parsed) {
	o := &p.o
	parts := []*parsed{first}
	ident := []manifest.Served{{Path: o.manifestPath, SHA256: obs.ManifestSHA256}}
	for _, path := range o.morePaths {
		u := o.scheme + "://" + in.t.Address + path
		r := in.get(ctx, path)
		switch {
		case r.status == 0 && r.err != nil:
			obs.Reached, obs.Error = false, r.err.Error()
			return
		case r.status >= 500 || r.status == http.StatusTooManyRequests:
			obs.Reached, obs.Error = false, fmt.Sprintf("GET %s answered %d %s", u, r.status, http.StatusText(r.status))
			return
		case r.err != nil && !errors.Is(r.err, ErrTooLarge) && !errors.Is(r.err, ErrEncoding):
			obs.Reached, obs.Error = false, fmt.Sprintf("GET %s answered %d but the body broke off (%s)", u, r.status, brokeOff(r.err))
			return
		case r.err != nil:
			obs.ManifestInvalid = r.err.Error()
			return
		case r.status != http.StatusOK:
			obs.ManifestInvalid = fmt.Sprintf("GET %s answered %d %s", u, r.status, http.StatusText(r.status))
			return
		}
		pm := p.parse(path, sha256.Sum256(r.body), r.body, r.header.Get("Content-Type"))
		hexSum := pm.sum
		if pm.invalid != "" {
			obs.ManifestInvalid = fmt.Sprintf("%s: %s", u, pm.invalid)
			return
		}
		obs.ManifestBytes += int64(len(r.body))
		ident = append(ident, manifest.Served{Path: path, SHA256: hexSum})
		parts = append(parts, pm)
	}
	u := p.union(manifest.CombinedSHA256(ident), parts)
	obs.ManifestSHA256 = u.sum // one copy per combination, shared by its instances
	limit := o.maxAssets
	if limit <= 0 {
		limit = manifest.DefaultMaxAssets
	}
	if len(u.assets) > limit {
		obs.ManifestInvalid = fmt.Sprintf("the manifests at %s reference %d assets together, more than %d (probe.manifest.max_assets)",
			strings.Join(append([]string{o.manifestPath}, o.morePaths...), ", "), len(u.assets), limit)
		return
	}
	obs.ManifestFormat, obs.Assets, obs.AssetsSHA256, obs.SkippedAssets = u.format, u.assets, u.assetsHash, u.skipped
}

// union merges parsed manifests once per distinct combination: their assets as manifest.Union
// gives them, formats joined by "+".
func (p *Prober) union(key string, parts []*parsed) *parsed {
	p.mu.Lock()
	u, ok := p.unions[key]
	if !ok {
		u = &parsed{sum: key}
		p.unions[key] = u
	}
	p.mu.Unlock()
	u.once.Do(func() {
		var formats []string
		for _, pm := range parts {
			u.skipped += pm.skipped
			if !slices.Contains(formats, pm.format) {
				formats = append(formats, pm.format)
			}
		}
		lists := make([][]model.Asset, len(parts))
		for i, pm := range parts {
			lists[i] = pm.assets
		}
		u.assets = manifest.Union(lists...)
		u.format = strings.Join(formats, "+")
		u.assetsHash = manifest.AssetsSHA256(u.assets)
	})
	return u
}
