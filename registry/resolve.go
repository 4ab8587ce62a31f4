package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/polygraph-dev/polygraph/model"
)

// Digest kinds in a DigestSet (model.RecordDigest.Kind).
const (
	KindIndex    = "index"
	KindManifest = "manifest"
	KindConfig   = "config"
)

// DigestSet is the release digest set of an image reference (SPEC §1): the top digest (index or
// manifest), each platform manifest digest and each config digest (image ID) under it.
// Attestation manifests (platform unknown/unknown) are not part of it.
type DigestSet struct {
	// Ref is the reference as given.
	Ref string `json:"ref"`
	// Digest is the top digest the reference resolved to.
	Digest string `json:"digest"`
	// MediaType is the media type of the top manifest.
	MediaType string `json:"media_type,omitempty"`
	// Digests lists every member: the top digest first, then for each platform its manifest
	// and its config, in the index's order. Digests may repeat across kinds when an image is
	// single-platform (the top digest is then also the platform manifest).
	Digests []model.RecordDigest `json:"digests"`
}

// Equivalent reports whether digest identifies the same release as set: whether it is any
// member of the set, whichever one the runtime recorded (Docker records the config digest as
// .Image and the index digest in RepoDigests; containerd the index or the platform manifest).
// digest may be a bare "sha256:..." or a "repo@sha256:..." reference; case is ignored. An
// empty digest or a nil set is never equivalent.
func Equivalent(set *DigestSet, digest string) bool {
	if set == nil {
		return false
	}
	if model.SameDigest(set.Digest, digest) {
		return true
	}
	for _, m := range set.Digests {
		if model.SameDigest(m.Digest, digest) {
			return true
		}
	}
	return false
}

// SetFromRecord returns the digest set a release record holds.
func SetFromRecord(rec *model.ReleaseRecord) *DigestSet {
	s := &DigestSet{Ref: rec.Image, Digest: rec.Digest, Digests: append([]model.RecordDigest(nil), rec.Digests...)}
	if rec.Digest != "" && !Equivalent(&DigestSet{Digests: s.Digests}, rec.Digest) {
		kind := KindManifest
		s.Digests = append([]model.RecordDigest{{Digest: rec.Digest, Kind: kind}}, s.Digests...)
	}
	return s
}

// TagMoved reports whether the reference recorded in rec now resolves (to now) elsewhere than
// the record's top digest: the tag was re-pushed. Both must be non-nil.
func TagMoved(rec *model.ReleaseRecord, now *DigestSet) bool {
	return !model.SameDigest(now.Digest, rec.Digest)
}

// resolution is a resolved reference: its digest set and the image manifests under it.
type resolution struct {
	ref    name.Reference
	set    *DigestSet
	images []platformImage
}

type platformImage struct {
	platform string
	digest   v1.Hash
	manifest *v1.Manifest
}

// Resolve resolves ref (a tag or a digest reference) to its release digest set. It asks with
// HEAD first (no manifest download, which registries such as Docker Hub do not count against
// pull limits) and falls back to GET when the registry answers HEAD with 404 or 405, or without
// a digest; manifests are then read by digest, from the disk cache when there.
func (c *Client) Resolve(ctx context.Context, ref string) (*DigestSet, error) {
	r, err := bounded(ctx, "resolving", ref, c.registryOf(ref), func() (*resolution, error) { return c.resolve(ctx, ref) })
	if err != nil {
		return nil, err
	}
	return r.set, nil
}

func (c *Client) resolve(ctx context.Context, refStr string) (*resolution, error) {
	ref, err := c.parseRef(refStr)
	if err != nil {
		return nil, err
	}
	reg := ref.Context().RegistryStr()
	fail := func(err error) (*resolution, error) {
		return nil, fmt.Errorf("resolving %q: %w", refStr, classify(err, reg, refStr))
	}
	var top v1.Hash
	var raw []byte
	if d, ok := ref.(name.Digest); ok {
		if top, err = v1.NewHash(d.DigestStr()); err != nil {
			return nil, &ReferenceError{Ref: refStr, Err: err}
		}
	} else {
		desc, err := c.puller.Head(ctx, ref)
		switch {
		case err == nil:
			top = desc.Digest
		case headFallback(err):
			c.log.DebugContext(ctx, "HEAD gave no digest, falling back to GET", "ref", refStr, "err", err)
			d, gerr := c.puller.Get(ctx, ref)
			if gerr != nil {
				return fail(gerr)
			}
			top, raw = d.Digest, d.Manifest
			c.cache.putBlob(top, raw)
		default:
			return fail(err)
		}
	}
	res := &resolution{ref: ref}
	if raw == nil {
		if raw, err = c.manifestBytes(ctx, ref.Context(), top); err != nil {
			return fail(err)
		}
	}
	set := &DigestSet{Ref: refStr, Digest: top.String()}
	mt, isIndex, err := sniff(raw)
	if err != nil {
		return fail(fmt.Errorf("reading manifest %s: %w", top, err))
	}
	set.MediaType = mt
	if isIndex {
		set.Digests = append(set.Digests, model.RecordDigest{Digest: top.String(), Kind: KindIndex})
		if err := c.walkIndex(ctx, ref.Context(), raw, set, res, 0); err != nil {
			return fail(err)
		}
	} else {
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return fail(fmt.Errorf("parsing manifest %s: %w", top, err))
		}
		cfg, err := c.configFile(ctx, ref.Context(), m.Config.Digest)
		if err != nil {
			return fail(err)
		}
		p := formatPlatform(cfg.OS, cfg.Architecture, cfg.Variant)
		set.Digests = append(set.Digests,
			model.RecordDigest{Digest: top.String(), Kind: KindManifest, Platform: p},
			model.RecordDigest{Digest: m.Config.Digest.String(), Kind: KindConfig, Platform: p})
		res.images = append(res.images, platformImage{platform: p, digest: top, manifest: m})
	}
	res.set = set
	c.log.DebugContext(ctx, "resolved", "ref", refStr, "digest", set.Digest, "digests", len(set.Digests))
	return res, nil
}

func (c *Client) walkIndex(ctx context.Context, repo name.Repository, raw []byte, set *DigestSet, res *resolution, depth int) error {
	if depth > 2 {
		return fmt.Errorf("image index nested more than %d deep", depth)
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("parsing image index: %w", err)
	}
	for _, d := range idx.Manifests {
		if isAttestation(d) {
			continue
		}
		child, err := c.manifestBytes(ctx, repo, d.Digest)
		if err != nil {
			return err
		}
		_, isIndex, err := sniff(child)
		if err != nil {
			return fmt.Errorf("reading manifest %s: %w", d.Digest, err)
		}
		if isIndex || d.MediaType.IsIndex() {
			set.Digests = append(set.Digests, model.RecordDigest{Digest: d.Digest.String(), Kind: KindIndex})
			if err := c.walkIndex(ctx, repo, child, set, res, depth+1); err != nil {
				return err
			}
			continue
		}
		m, err := v1.ParseManifest(bytes.NewReader(child))
		if err != nil {
			return fmt.Errorf("parsing manifest %s: %w", d.Digest, err)
		}
		var p string
		if d.Platform != nil {
			p = formatPlatform(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant)
		}
		set.Digests = append(set.Digests,
			model.RecordDigest{Digest: d.Digest.String(), Kind: KindManifest, Platform: p},
			model.RecordDigest{Digest: m.Config.Digest.String(), Kind: KindConfig, Platform: p})
		res.images = append(res.images, platformImage{platform: p, digest: d.Digest, manifest: m})
	}
	return nil
}

// isAttestation reports whether an index entry is an attestation manifest (BuildKit writes
// provenance and SBOMs as platform unknown/unknown).
func isAttestation(d v1.Descriptor) bool {
	if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// headFallback reports whether a HEAD error calls for a GET: 404 or 405 (some registries do not
// implement HEAD on tags), or an answer without a digest header.
func headFallback(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode == http.StatusNotFound || te.StatusCode == http.StatusMethodNotAllowed
	}
	return strings.Contains(err.Error(), "did not include")
}

// sniff reads a manifest's media type and whether it is an index.
func sniff(raw []byte) (string, bool, error) {
	var m struct {
		MediaType string            `json:"mediaType"`
		Manifests []json.RawMessage `json:"manifests"`
		Config    json.RawMessage   `json:"config"`
		Schema    int               `json:"schemaVersion"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", false, err
	}
	mt := types.MediaType(m.MediaType)
	switch {
	case mt.IsIndex() || (m.Manifests != nil && m.Config == nil):
		return m.MediaType, true, nil
	case m.Config != nil:
		return m.MediaType, false, nil
	}
	return "", false, fmt.Errorf("unsupported manifest (schema version %d, media type %q)", m.Schema, m.MediaType)
}

// manifestBytes returns the manifest with digest d, from the cache or the registry.
func (c *Client) manifestBytes(ctx context.Context, repo name.Repository, d v1.Hash) ([]byte, error) {
	if b, ok := c.cache.getBlob(d); ok {
		return b, nil
	}
	desc, err := c.puller.Get(ctx, repo.Digest(d.String()))
	if err != nil {
		return nil, classify(err, repo.RegistryStr(), repo.Digest(d.String()).String())
	}
	c.cache.putBlob(d, desc.Manifest)
	return desc.Manifest, nil
}

// configFile returns the config blob with digest d, parsed.
func (c *Client) configFile(ctx context.Context, repo name.Repository, d v1.Hash) (*v1.ConfigFile, error) {
	b, ok := c.cache.getBlob(d)
	if !ok {
		ref := repo.Digest(d.String())
		l, err := c.puller.Layer(ctx, ref)
		if err != nil {
			return nil, classify(err, repo.RegistryStr(), ref.String())
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, classify(err, repo.RegistryStr(), ref.String())
		}
		b, err = io.ReadAll(io.LimitReader(rc, maxBlobSize+1))
		rc.Close()
		if err != nil {
			return nil, classify(fmt.Errorf("reading config %s: %w", d, err), repo.RegistryStr(), ref.String())
		}
		if len(b) > maxBlobSize {
			return nil, fmt.Errorf("config %s is over %d bytes", d, maxBlobSize)
		}
		c.cache.putBlob(d, b)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing config %s: %w", d, err)
	}
	return cfg, nil
}

func formatPlatform(os, arch, variant string) string {
	if os == "" && arch == "" {
		return ""
	}
	s := os + "/" + arch
	if variant != "" {
		s += "/" + variant
	}
	return s
}

// parsePlatform parses os/arch[/variant].
func parsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return v1.Platform{}, &ReferenceError{Ref: s, Platform: true, Err: errors.New("want os/arch[/variant]")}
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// pick returns the image of the platform asked for.
func (r *resolution) pick(platform string) (*platformImage, error) {
	want, err := parsePlatform(platform)
	if err != nil {
		return nil, err
	}
	var have []string
	for i := range r.images {
		im := &r.images[i]
		if im.platform == "" && len(r.images) == 1 {
			return im, nil // a single image without platform information
		}
		got, err := parsePlatform(im.platform)
		if err == nil && got.OS == want.OS && got.Architecture == want.Architecture &&
			(want.Variant == "" || want.Variant == got.Variant || (got.Variant == "" && want.Architecture == "arm64" && want.Variant == "v8")) {
			return im, nil
		}
		have = append(have, im.platform)
	}
	return nil, &NotFoundError{Ref: r.set.Ref, Platform: platform, Reason: "it has " + strings.Join(have, ", ")}
}
