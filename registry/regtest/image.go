package regtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// EntryType is the kind of a layer entry.
type EntryType int

// Entry types.
const (
	Regular  EntryType = iota // a regular file with Data (or RandomSize random bytes)
	Dir                       // a directory
	Symlink                   // a symbolic link to Link
	Hardlink                  // a hard link to Link
	Whiteout                  // deletes Path from the layers below
	Opaque                    // hides the contents of directory Path in the layers below
)

// File is one entry of a layer.
type File struct {
	// Path is where the entry lives in the image ("/app/dist/asset-manifest.json").
	Path string
	// Type is the kind of entry. The default is Regular.
	Type EntryType
	// Data is the content of a regular file.
	Data []byte
	// RandomSize, when positive, replaces Data with that many incompressible bytes, generated
	// quickly and deterministically from Path and never held in memory whole.
	RandomSize int64
	// Link is the target of a Symlink or Hardlink.
	Link string
}

// Image is a single-platform image, its layers listed bottom first.
type Image struct {
	// Platform is os/arch[/variant]. The default is linux/amd64.
	Platform string
	Layers   [][]File
	// Created is the config's `created` time. The default is none (the zero time).
	Created time.Time
}

// Index is a multi-platform image.
type Index struct {
	Images []Image
	// Attestation adds a BuildKit-style attestation manifest (platform unknown/unknown) for the
	// first image, which is not part of the release digest set.
	Attestation bool
}

// Pushed says what was pushed.
type Pushed struct {
	// Ref is the reference pushed to; Digest is its top digest (index or manifest).
	Ref, Digest string
	// Images lists each platform's manifest and config digest, in index order.
	Images []PushedImage
	// Attestation is the attestation manifest's digest, when one was pushed.
	Attestation string
}

// PushedImage is one platform of a push.
type PushedImage struct {
	Platform, Manifest, Config string
}

// Digests returns the release digest set the push makes: the top digest, then each platform's
// manifest and config digest (a single-platform image's top digest is its manifest).
func (p *Pushed) Digests() []string {
	out := []string{p.Digest}
	for _, im := range p.Images {
		if im.Manifest != p.Digest {
			out = append(out, im.Manifest)
		}
		out = append(out, im.Config)
	}
	return out
}

// pushOptions are the options of every push: one upload at a time, since the in-process
// registry buffers each upload in memory.
func pushOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithJobs(1)}
}

// Push builds img and pushes it as a single-platform image to ref (a tag reference). Pushing
// again to the same tag with other files re-points the tag.
func Push(ctx context.Context, ref string, img Image) (*Pushed, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", ref, err)
	}
	im, err := Build(img)
	if err != nil {
		return nil, err
	}
	if err := remote.Write(r, im, pushOptions(ctx)...); err != nil {
		return nil, fmt.Errorf("pushing %q: %w", ref, err)
	}
	pi, err := describe(img.Platform, im)
	if err != nil {
		return nil, err
	}
	return &Pushed{Ref: ref, Digest: pi.Manifest, Images: []PushedImage{pi}}, nil
}

// PushIndex builds the images of idx and pushes them as an OCI image index to ref.
func PushIndex(ctx context.Context, ref string, idx Index) (*Pushed, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", ref, err)
	}
	var ii v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	pushed := &Pushed{Ref: ref}
	for _, img := range idx.Images {
		im, err := Build(img)
		if err != nil {
			return nil, err
		}
		pi, err := describe(img.Platform, im)
		if err != nil {
			return nil, err
		}
		p, _ := parsePlatform(img.Platform)
		ii = mutate.AppendManifests(ii, mutate.IndexAddendum{Add: im, Descriptor: v1.Descriptor{Platform: &p}})
		pushed.Images = append(pushed.Images, pi)
	}
	if idx.Attestation && len(pushed.Images) > 0 {
		att, err := attestation()
		if err != nil {
			return nil, err
		}
		d, err := att.Digest()
		if err != nil {
			return nil, err
		}
		ii = mutate.AppendManifests(ii, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{
				"vnd.docker.reference.type":   "attestation-manifest",
				"vnd.docker.reference.digest": pushed.Images[0].Manifest,
			},
		}})
		pushed.Attestation = d.String()
	}
	if err := remote.WriteIndex(r, ii, pushOptions(ctx)...); err != nil {
		return nil, fmt.Errorf("pushing %q: %w", ref, err)
	}
	d, err := ii.Digest()
	if err != nil {
		return nil, err
	}
	pushed.Digest = d.String()
	return pushed, nil
}

// Build builds img without pushing it.
func Build(img Image) (v1.Image, error) {
	p, err := parsePlatform(img.Platform)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	var adds []mutate.Addendum
	for _, files := range img.Layers {
		l, err := layer(files)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.OCILayer})
	}
	im, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, fmt.Errorf("building image: %w", err)
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	if !img.Created.IsZero() {
		cf.Created = v1.Time{Time: img.Created}
	}
	return mutate.ConfigFile(im, cf)
}

func describe(platform string, im v1.Image) (PushedImage, error) {
	md, err := im.Digest()
	if err != nil {
		return PushedImage{}, err
	}
	cd, err := im.ConfigName()
	if err != nil {
		return PushedImage{}, err
	}
	if platform == "" {
		platform = "linux/amd64"
	}
	return PushedImage{Platform: platform, Manifest: md.String(), Config: cd.String()}, nil
}

func parsePlatform(s string) (v1.Platform, error) {
	if s == "" {
		s = "linux/amd64"
	}
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return v1.Platform{}, fmt.Errorf("platform %q is not os/arch[/variant]", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// attestation builds an in-toto attestation manifest like BuildKit's.
func attestation() (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	l := static.NewLayer([]byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://slsa.dev/provenance/v0.2"}`), "application/vnd.in-toto+json")
	return mutate.Append(base, mutate.Addendum{Layer: l, Annotations: map[string]string{"in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"}})
}

// layer makes a gzip layer of files; the tar is generated on each read, never held whole.
func layer(files []File) (v1.Layer, error) {
	level := gzip.BestSpeed
	for _, f := range files {
		if f.RandomSize > 0 {
			level = gzip.NoCompression // random bytes do not compress; do not spend time trying
		}
	}
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, files)) }()
		return pr, nil
	}
	l, err := tarball.LayerFromOpener(opener, tarball.WithCompressionLevel(level), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("building layer: %w", err)
	}
	return l, nil
}

func writeTar(w io.Writer, files []File) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		p := strings.TrimPrefix(f.Path, "/")
		dir, base := splitPath(p)
		hdr := &tar.Header{Name: p, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		var body io.Reader
		switch f.Type {
		case Regular:
			if f.RandomSize > 0 {
				hdr.Size, body = f.RandomSize, io.LimitReader(randomReader(f.Path), f.RandomSize)
			} else {
				hdr.Size, body = int64(len(f.Data)), bytes.NewReader(f.Data)
			}
		case Dir:
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, p+"/"
		case Symlink:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
		case Hardlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, strings.TrimPrefix(f.Link, "/")
		case Whiteout:
			hdr.Name = dir + ".wh." + base
		case Opaque:
			hdr.Name = p + "/.wh..wh..opq"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func splitPath(p string) (dir, base string) {
	i := strings.LastIndex(p, "/")
	return p[:i+1], p[i+1:]
}

// randomReader returns a fast, deterministic stream of incompressible bytes seeded by s.
func randomReader(s string) io.Reader {
	sum := sha256.Sum256([]byte(s))
	var seed [32]byte
	copy(seed[:], sum[:])
	return rand.NewChaCha8(seed)
}
