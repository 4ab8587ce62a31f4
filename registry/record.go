package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/polygraph-dev/polygraph/internal/safeio"
	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// Record resolves image, reads manifestFiles out of its image for platform ("" is the
// client's default) and returns the release record (schema polygraph.release/v1): the image as
// given, its digest set, the sha256 of the manifest's raw bytes, and the asset-set hash and
// count parsed from them. The files are read from the digest the reference resolved to, so a
// tag re-pushed in between cannot mix two releases.
//
// Several files are the manifests an instance serves at several paths (WithManifestPaths, one
// per file, in order): the record then holds what an instance serving them all is judged by,
// manifest.CombinedSHA256 of the paths with each file's hash and the hash of manifest.Union of
// their assets, exactly as the prober combines them.
func (c *Client) Record(ctx context.Context, image, platform string, manifestFiles ...string) (*model.ReleaseRecord, error) {
	if len(manifestFiles) == 0 {
		return nil, fmt.Errorf("recording %s: no manifest file to read from the image", image)
	}
	several := len(manifestFiles) > 1
	if several && len(c.o.paths) != len(manifestFiles) {
		return nil, fmt.Errorf("recording %s: %d manifest files need the URL path each is served at (probe.manifest.paths), got %d paths",
			image, len(manifestFiles), len(c.o.paths))
	}
	if platform == "" {
		platform = c.o.platform
	}
	if _, err := parsePlatform(platform); err != nil {
		return nil, err
	}
	res, err := bounded(ctx, "resolving", image, c.registryOf(image), func() (*resolution, error) { return c.resolve(ctx, image) })
	if err != nil {
		return nil, err
	}
	served := make([]manifest.Served, len(manifestFiles))
	lists := make([][]model.Asset, len(manifestFiles))
	for i, file := range manifestFiles {
		f, err := bounded(ctx, "reading "+file+" from", image, c.registryOf(image), func() (*File, error) {
			return c.readFile(ctx, res, platform, file)
		})
		if err != nil {
			return nil, err
		}
		opts := manifest.Options{Path: "/" + path.Base(file)}
		if c.o.manifest != nil {
			opts = *c.o.manifest
		}
		if several {
			opts.Path = c.o.paths[i]
		}
		m, err := manifest.Parse(c.o.format, f.Data, opts)
		if err != nil {
			if several {
				return nil, fmt.Errorf("parsing %q (served at %s) from image %s: %w", file, opts.Path, image, err)
			}
			return nil, fmt.Errorf("parsing %q from image %s: %w", file, image, err)
		}
		served[i], lists[i] = manifest.Served{Path: opts.Path, SHA256: f.SHA256}, m.Assets
	}
	rec := &model.ReleaseRecord{
		Schema:           model.RecordSchema,
		Image:            image,
		Digest:           res.set.Digest,
		Digests:          res.set.Digests,
		Platform:         platform,
		RecordedAt:       c.o.now().UTC(),
		PolygraphVersion: c.o.version,
	}
	if !several {
		rec.ManifestFile, rec.ManifestSHA256 = manifestFiles[0], served[0].SHA256
		rec.AssetsSHA256, rec.Assets = manifest.AssetsSHA256(lists[0]), len(lists[0])
		return rec, nil
	}
	assets := manifest.Union(lists...)
	limit := manifest.DefaultMaxAssets
	if c.o.manifest != nil && c.o.manifest.MaxAssets > 0 {
		limit = c.o.manifest.MaxAssets
	}
	if len(assets) > limit {
		return nil, fmt.Errorf("recording %s: the manifests %s reference %d assets together, more than %d (probe.manifest.max_assets)",
			image, strings.Join(manifestFiles, ", "), len(assets), limit)
	}
	rec.ManifestFiles, rec.ManifestPaths = append([]string(nil), manifestFiles...), append([]string(nil), c.o.paths...)
	rec.ManifestSHA256 = manifest.CombinedSHA256(served)
	rec.AssetsSHA256, rec.Assets = manifest.AssetsSHA256(assets), len(assets)
	return rec, nil
}

// MaxRecordSize bounds the size of a release record file.
const MaxRecordSize = 4 << 20

// LoadRecord reads a release record file written by `polygraph release record`. It rejects
// a file that is not regular or is over MaxRecordSize (a *safeio.Error), unknown fields,
// another schema, and a record without a digest.
func LoadRecord(file string) (*model.ReleaseRecord, error) {
	b, err := safeio.ReadFile(file, MaxRecordSize)
	if err != nil {
		return nil, fmt.Errorf("release record: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rec model.ReleaseRecord
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("reading release record %q: %w", file, err)
	}
	switch {
	case rec.Schema != model.RecordSchema:
		return nil, fmt.Errorf("reading release record %q: schema is %q, want %q", file, rec.Schema, model.RecordSchema)
	case rec.Digest == "":
		return nil, fmt.Errorf("reading release record %q: no digest", file)
	case len(rec.ManifestFiles) > 0 && rec.ManifestFile != "":
		return nil, fmt.Errorf("reading release record %q: both manifest_file and manifest_files", file)
	case len(rec.ManifestFiles) != len(rec.ManifestPaths):
		return nil, fmt.Errorf("reading release record %q: %d manifest_files but %d manifest_paths", file, len(rec.ManifestFiles), len(rec.ManifestPaths))
	}
	return &rec, nil
}

// CheckRecordPaths reports whether rec can judge instances serving manifests at paths
// (probe.manifest.paths; none or one is a single manifest): a record of one manifest judges
// one, a record of several judges exactly the paths it was recorded for, in the same order,
// since its manifest_sha256 combines each path with its file's hash. A record without a
// manifest hash judges by digests only and fits any paths.
func CheckRecordPaths(rec *model.ReleaseRecord, paths []string) error {
	several := len(paths) > 1
	switch {
	case rec.ManifestSHA256 == "" && rec.AssetsSHA256 == "":
		return nil
	case several && len(rec.ManifestFiles) == 0:
		return fmt.Errorf("the release record of %s holds one manifest (%s), and probe.manifest.paths lists %d: record the release again with one release.manifest_file per path",
			rec.Image, rec.ManifestFile, len(paths))
	case !several && len(rec.ManifestFiles) > 0:
		return fmt.Errorf("the release record of %s holds the manifests served at %s: list those paths under probe.manifest.paths",
			rec.Image, strings.Join(rec.ManifestPaths, ", "))
	case several && !slices.Equal(rec.ManifestPaths, paths):
		return fmt.Errorf("the release record of %s was recorded for the manifests served at %s, and probe.manifest.paths lists %s: record the release again with this config",
			rec.Image, strings.Join(rec.ManifestPaths, ", "), strings.Join(paths, ", "))
	}
	return nil
}
