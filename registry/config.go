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
// is taken as served at "/" plus the base name of release.manifest_file; with
// probe.manifest.paths, the files of release.manifest_file are served at those paths, in
// order, each parsed with the same options but its own path. opts are applied
// after and win: the caller's logger, version, cache directory or transport.
func FromConfig(cfg *config.Config, opts ...Option) (*Client, error) {
	base := []Option{
		WithManifestFormat(ManifestParsing(cfg, firstFile(cfg.Release.ManifestFiles))),
		WithManifestPaths(cfg.Probe.Manifest.Paths...),
		WithInsecureRegistries(cfg.Registry.Insecure...),
	}
	if cfg.Release.Platform != "" {
		base = append(base, WithPlatform(cfg.Release.Platform))
	}
	return New(append(base, opts...)...)
}

// ManifestParsing is how a manifest is read under cfg: its format and the options that shape
// its asset set (URL path, prefix, source maps, the reference cap). The prober, the registry
// client of verify and `release record` all read manifests through it, so a record and a
// verify run from one config compute the same asset set. file is the manifest's path inside
// the image; it names the URL path only when the config gives none. The options are those of
// the first path of probe.manifest.paths; every other path is parsed alike, with its own Path.
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

func firstFile(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return files[0]
}
