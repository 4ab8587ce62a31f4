package registry

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// File is a regular file read out of an image.
type File struct {
	// Ref is the image reference as given; Digest its top digest.
	Ref, Digest string
	// Platform is the platform whose image was read, and ManifestDigest that image's manifest.
	Platform, ManifestDigest string
	// Path is the path asked for.
	Path string
	// Layer is the digest of the layer the file came from, LayerIndex its position (0 is the
	// bottom layer).
	Layer      string
	LayerIndex int
	// Size and SHA256 (hex) describe Data, the file's bytes.
	Size   int64
	SHA256 string
	Data   []byte
}

// ReadFile reads the regular file at path (absolute, inside the image) out of ref's image for
// platform ("" is the client's default). It scans layers from the top down, honouring
// whiteouts and opaque directories, and stops at the first layer that has the file, so only
// the layers above it and that one are downloaded; what it learns about each layer is cached
// on disk by layer digest, so a second run downloads nothing.
//
// Errors: *NotFoundError (image, platform or file missing, or deleted by a whiteout),
// *TooLargeError, *NotRegularError, *UnavailableError, *AuthError, *ReferenceError.
func (c *Client) ReadFile(ctx context.Context, ref, platform, filePath string) (*File, error) {
	return bounded(ctx, "reading "+filePath+" from", ref, c.registryOf(ref), func() (*File, error) {
		res, err := c.resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		return c.readFile(ctx, res, platform, filePath)
	})
}

func (c *Client) readFile(ctx context.Context, res *resolution, platform, filePath string) (*File, error) {
	if platform == "" {
		platform = c.o.platform
	}
	ref := res.set.Ref
	target := cleanPath(filePath)
	if target == "" {
		return nil, &NotRegularError{Ref: ref, Path: filePath, Type: "directory"}
	}
	im, err := res.pick(platform)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", filePath, err)
	}
	repo := res.ref.Context()
	notFound := func(reason string) error {
		return &NotFoundError{Ref: ref, Platform: platform, Path: filePath, Reason: reason}
	}
	layers := im.manifest.Layers
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		lr, err := c.lookup(ctx, repo, l.Digest, target)
		if err != nil {
			return nil, fmt.Errorf("reading %q from layer %d (%s) of %s: %w", filePath, i+1, l.Digest, ref, err)
		}
		where := fmt.Sprintf("layer %d (%s)", i+1, l.Digest)
		switch lr.State {
		case stateAbsent:
			continue
		case stateWhiteout:
			return nil, notFound(fmt.Sprintf("deleted by whiteout of %q in %s", "/"+lr.Entry, where))
		case stateOpaque:
			return nil, notFound(fmt.Sprintf("hidden by opaque directory %q in %s", "/"+lr.Entry, where))
		case stateParentNotDir:
			return nil, notFound(fmt.Sprintf("%q is a %s in %s", "/"+lr.Entry, lr.Type, where))
		case stateNotRegular:
			return nil, &NotRegularError{Ref: ref, Path: "/" + lr.Entry, Type: lr.Type, Link: lr.Link}
		case stateFile:
			if lr.Size > c.o.maxFileSize {
				return nil, &TooLargeError{Ref: ref, Path: filePath, Size: lr.Size, Limit: c.o.maxFileSize}
			}
			c.log.DebugContext(ctx, "read file from image", "ref", ref, "path", filePath, "layer", l.Digest.String(), "size", lr.Size)
			return &File{
				Ref: ref, Digest: res.set.Digest, Platform: im.platform, ManifestDigest: im.digest.String(),
				Path: filePath, Layer: l.Digest.String(), LayerIndex: i,
				Size: lr.Size, SHA256: lr.SHA256, Data: lr.data,
			}, nil
		}
	}
	return nil, notFound(fmt.Sprintf("no layer of %d has it", len(layers)))
}

// Layer lookup states.
const (
	stateAbsent       = "absent"         // the layer says nothing about the path
	stateFile         = "file"           // a regular file
	stateNotRegular   = "not-regular"    // a directory, link, device...
	stateWhiteout     = "whiteout"       // the path or a parent is deleted
	stateOpaque       = "opaque"         // a parent is an opaque directory: lower layers hidden
	stateParentNotDir = "parent-not-dir" // a parent is a file or link in this layer
)

// layerResult is what one layer says about one path. It is cached by layer digest and path.
type layerResult struct {
	State  string `json:"state"`
	Entry  string `json:"entry,omitempty"` // the entry concerned (whiteout, opaque dir, parent)
	Type   string `json:"type,omitempty"`
	Link   string `json:"link,omitempty"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	data   []byte
}

// lookup asks a layer about target, from the cache or by downloading and scanning it.
func (c *Client) lookup(ctx context.Context, repo name.Repository, layer v1.Hash, target string) (*layerResult, error) {
	if lr, ok := c.cache.getLookup(layer, target, c.o.maxFileSize); ok {
		return lr, nil
	}
	ref := repo.Digest(layer.String())
	l, err := c.puller.Layer(ctx, ref)
	if err != nil {
		return nil, classify(err, repo.RegistryStr(), ref.String())
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, classify(err, repo.RegistryStr(), ref.String())
	}
	defer rc.Close()
	r := &capReader{r: rc, left: c.o.maxLayer, layer: layer}
	lr, err := scanLayer(r, target, c.o.maxFileSize)
	if err == nil {
		// Read to the end so the library checks the layer's digest.
		_, err = io.Copy(io.Discard, r)
	}
	if err != nil {
		return nil, classify(err, repo.RegistryStr(), ref.String())
	}
	c.log.DebugContext(ctx, "scanned layer", "layer", layer.String(), "path", target, "state", lr.State)
	c.cache.putLookup(layer, target, lr)
	return lr, nil
}

// scanLayer reads a layer tar and says what it holds about target (a clean relative path).
// A layer's own entries win over its whiteouts, which apply to the layers below.
func scanLayer(r io.Reader, target string, max int64) (*layerResult, error) {
	tr := tar.NewReader(r)
	var entry, blocker *layerResult
	var whiteout, opaque string
	haveWhiteout, haveOpaque := false, false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading layer: %w", err)
		}
		name := cleanPath(hdr.Name)
		dir, base := path.Split(name)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == ".wh..wh..opq":
			if isParent(dir, target) {
				opaque, haveOpaque = dir, true
			}
		case strings.HasPrefix(base, ".wh."):
			victim := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			if victim == target || isParent(victim, target) {
				whiteout, haveWhiteout = victim, true
			}
		case name == target:
			e := &layerResult{Entry: name, Type: typeName(hdr.Typeflag), Link: hdr.Linkname}
			if hdr.Typeflag != tar.TypeReg {
				e.State = stateNotRegular
				entry = e
				continue
			}
			e.State, e.Size, e.Type = stateFile, hdr.Size, ""
			if hdr.Size <= max {
				h := sha256.New()
				data, err := io.ReadAll(io.TeeReader(io.LimitReader(tr, max), h))
				if err != nil {
					return nil, fmt.Errorf("reading %q: %w", "/"+name, err)
				}
				e.data, e.Size, e.SHA256 = data, int64(len(data)), hex.EncodeToString(h.Sum(nil))
			}
			entry = e
		case name != "" && isParent(name, target):
			if hdr.Typeflag == tar.TypeDir {
				if blocker != nil && blocker.Entry == name {
					blocker = nil
				}
			} else {
				blocker = &layerResult{State: stateParentNotDir, Entry: name, Type: typeName(hdr.Typeflag), Link: hdr.Linkname}
			}
		}
	}
	switch {
	case entry != nil:
		return entry, nil
	case blocker != nil:
		if blocker.Type == "symlink" {
			// A symlinked parent would need resolving across layers: refuse it clearly.
			return &layerResult{State: stateNotRegular, Entry: blocker.Entry, Type: "symlink", Link: blocker.Link}, nil
		}
		return blocker, nil
	case haveWhiteout:
		return &layerResult{State: stateWhiteout, Entry: whiteout}, nil
	case haveOpaque:
		return &layerResult{State: stateOpaque, Entry: opaque}, nil
	}
	return &layerResult{State: stateAbsent}, nil
}

// cleanPath makes an image path or tar entry name relative and clean: "/app/x", "./app/x/" and
// "app//x" all become "app/x"; the root is "".
func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// isParent reports whether dir is a parent directory of p (the root "" is everyone's parent).
func isParent(dir, p string) bool {
	return dir == "" || strings.HasPrefix(p, dir+"/")
}

func typeName(t byte) string {
	switch t {
	case tar.TypeReg:
		return "regular file"
	case tar.TypeDir:
		return "directory"
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hardlink"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}

// capReader fails a layer that expands past its limit.
type capReader struct {
	r     io.Reader
	left  int64
	layer v1.Hash
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 && err != nil {
			return 0, err // the end, exactly at the limit
		}
		return 0, fmt.Errorf("layer %s expands past the layer size limit", c.layer)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
