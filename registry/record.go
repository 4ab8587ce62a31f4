package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/polygraph-dev/polygraph/internal/safeio"
	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// Record resolves image, reads manifestFile out of its image for platform ("" is the client's
// default) and returns the release record (schema polygraph.release/v1): the image as given,
// its digest set, the sha256 of the manifest's raw bytes, and the asset-set hash and count
// parsed from them. The file is read from the digest the reference resolved to, so a tag
// re-pushed in between cannot mix two releases.
func (c *Client) Record(ctx context.Context, image, platform, manifestFile string) (*model.ReleaseRecord, error) {
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
	f, err := bounded(ctx, "reading "+manifestFile+" from", image, c.registryOf(image), func() (*File, error) {
		return c.readFile(ctx, res, platform, manifestFile)
	})
	if err != nil {
		return nil, err
	}
	opts := manifest.Options{Path: "/" + path.Base(manifestFile)}
	if c.o.manifest != nil {
		opts = *c.o.manifest
	}
	m, err := manifest.Parse(c.o.format, f.Data, opts)
	if err != nil {
		return nil, fmt.Errorf("parsing %q from image %s: %w", manifestFile, image, err)
	}
	return &model.ReleaseRecord{
		Schema:           model.RecordSchema,
		Image:            image,
		Digest:           res.set.Digest,
		Digests:          res.set.Digests,
		Platform:         platform,
		ManifestFile:     manifestFile,
		ManifestSHA256:   f.SHA256,
		AssetsSHA256:     manifest.AssetsSHA256(m.Assets),
		Assets:           len(m.Assets),
		RecordedAt:       c.o.now().UTC(),
		PolygraphVersion: c.o.version,
	}, nil
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
	}
	return &rec, nil
}
