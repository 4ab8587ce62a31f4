package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// diskCache keeps immutable results keyed by digest: blobs (manifests, configs, files read out
// of layers) under blobs/<algo>/<hex>, verified on every read, and what a layer holds about a
// path under layers/<algo>/<hex>/<sha256 of path>.json. A nil *diskCache caches nothing. Cache
// failures are logged and otherwise ignored: the cache is never the reason a run fails.
type diskCache struct {
	dir string
	log *slog.Logger
}

func (d *diskCache) blobPath(h v1.Hash) string {
	return filepath.Join(d.dir, "blobs", h.Algorithm, h.Hex)
}

func (d *diskCache) getBlob(h v1.Hash) ([]byte, bool) {
	if d == nil || h.Algorithm != "sha256" {
		return nil, false
	}
	p := d.blobPath(h)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != h.Hex {
		d.log.Warn("discarding a corrupt cache entry", "path", p)
		os.Remove(p)
		return nil, false
	}
	return b, true
}

func (d *diskCache) putBlob(h v1.Hash, b []byte) {
	if d == nil || h.Algorithm != "sha256" {
		return
	}
	d.write(d.blobPath(h), b)
}

func (d *diskCache) lookupPath(layer v1.Hash, target string) string {
	sum := sha256.Sum256([]byte(target))
	return filepath.Join(d.dir, "layers", layer.Algorithm, layer.Hex, hex.EncodeToString(sum[:16])+".json")
}

// getLookup returns what layer holds about target, with the file's bytes for a file no larger
// than max. A file cached as too large for a smaller limit is a miss.
func (d *diskCache) getLookup(layer v1.Hash, target string, max int64) (*layerResult, bool) {
	if d == nil {
		return nil, false
	}
	b, err := os.ReadFile(d.lookupPath(layer, target))
	if err != nil {
		return nil, false
	}
	var lr layerResult
	if err := json.Unmarshal(b, &lr); err != nil || lr.State == "" {
		return nil, false
	}
	if lr.State != stateFile || lr.Size > max {
		return &lr, true
	}
	if lr.SHA256 == "" {
		return nil, false
	}
	data, ok := d.getBlob(v1.Hash{Algorithm: "sha256", Hex: lr.SHA256})
	if !ok {
		return nil, false
	}
	lr.data = data
	return &lr, true
}

func (d *diskCache) putLookup(layer v1.Hash, target string, lr *layerResult) {
	if d == nil {
		return
	}
	if lr.data != nil {
		d.putBlob(v1.Hash{Algorithm: "sha256", Hex: lr.SHA256}, lr.data)
	}
	b, err := json.Marshal(lr)
	if err != nil {
		return
	}
	d.write(d.lookupPath(layer, target), b)
}

// write writes a file atomically (temporary file and rename), so concurrent runs never see a
// partial entry.
func (d *diskCache) write(p string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		d.log.Debug("cache not writable", "dir", filepath.Dir(p), "err", err)
		return
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		d.log.Debug("cache not writable", "dir", filepath.Dir(p), "err", err)
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
	}
}
