package run

import (
	"path/filepath"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/manifest"
)

// ManifestParsing is how a manifest is read under cfg: its format and the options that shape
// its asset set (URL path, prefix, source maps, the reference cap). The prober, the registry
// client of verify and `release record` all read manifests through it, so a record and a
// verify run from one config compute the same asset set. file is the manifest's path inside
// the image; it names the URL path only when the config gives none.
func ManifestParsing(cfg *config.Config, file string) (manifest.Format, manifest.Options) {
	m := cfg.Probe.Manifest
	path := m.Path
	if len(m.Paths) > 0 {
		path = m.Paths[0]
	}
	if path == "" && file != "" {
		path = "/" + filepath.Base(file)
	}
	format := manifest.Format(m.Format)
	if format == "" {
		format = manifest.Auto
	}
	return format, manifest.Options{Path: path, AssetPrefix: m.AssetPrefix, SourceMaps: cfg.CDN.CheckSourceMaps, MaxAssets: m.MaxAssets}
}
