package registry

import (
	"path/filepath"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/manifest"
)

// FromConfig makes the Client every command uses (verify, release record, policy check
// --resolve, diagnose), with the settings a configuration decides taken from it in this one
// place: the platform read by default (release.platform) and how a manifest read out of an
// image is parsed, exactly as the prober parses what instances serve (probe.manifest.format,
// path and asset_prefix, cdn.check_source_maps), so that a release record and a verify run
// from one configuration hash the same asset set. When probe.manifest.path is empty the file
// is taken as served at "/" plus the base name of release.manifest_file. opts are applied
// after and win: the caller's logger, version, cache directory or transport.
func FromConfig(cfg *config.Config, opts ...Option) (*Client, error) {
	m := cfg.Probe.Manifest
	path := m.Path
	if path == "" && cfg.Release.ManifestFile != "" {
		path = "/" + filepath.Base(cfg.Release.ManifestFile)
	}
	format := manifest.Format(m.Format)
	if format == "" {
		format = manifest.Auto
	}
	base := []Option{
		WithManifestFormat(format, manifest.Options{Path: path, AssetPrefix: m.AssetPrefix, SourceMaps: cfg.CDN.CheckSourceMaps}),
		WithInsecureRegistries(cfg.Registry.Insecure...),
	}
	if cfg.Release.Platform != "" {
		base = append(base, WithPlatform(cfg.Release.Platform))
	}
	return New(append(base, opts...)...)
}
