package manifest

import "bytes"

// propshaft is the Rails Propshaft manifest (.manifest.json): {logical: {digested_path,
// integrity}} since about 1.2, flat {logical: digested_path} before. Paths are under /assets/
// (or probe.manifest.asset_prefix); integrity is SRI (may be null).
type propshaft struct{}

func init() { register(propshaft{}) }

func (propshaft) format() Format { return "propshaft" }

func (propshaft) detect(in *input) bool {
	d := in.doc
	if in.allValues(in.root, func(v jv) bool { return v.kind == jObj && d.get(v, "digested_path").kind == jStr }) {
		return true
	}
	if in.name == ".manifest.json" {
		return in.allValues(in.root, func(v jv) bool { return v.kind == jStr })
	}
	// The legacy flat shape without the file name: every value is its key with a digest
	// inserted before the extension (or the key itself, for pre-digested files).
	ok := true
	d.each(in.root, func(k, v jv) {
		ok = ok && v.kind == jStr && propshaftDigested(d.bytes(k), d.bytes(v))
	})
	return ok && d.len(in.root) > 0
}

// propshaftDigested reports whether value is logical with "-<hex>" before its extension, as
// Propshaft's logical_path.sub(/\.(\w+(\.map)?)$/) writes it, or logical unchanged.
func propshaftDigested(logical, value []byte) bool {
	if len(value) == 0 || value[0] == '/' || bytes.Contains(value, []byte("://")) {
		return false
	}
	if bytes.Equal(logical, value) {
		return bytes.Contains(value, []byte(".digested."))
	}
	ext := extOf(logical)
	stem := logical[:len(logical)-len(ext)]
	if !bytes.HasPrefix(value, stem) || !bytes.HasSuffix(value, ext) || len(value) < len(stem)+len(ext)+8 {
		return false
	}
	mid := value[len(stem) : len(value)-len(ext)]
	if mid[0] != '-' {
		return false
	}
	for _, c := range mid[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return len(mid) >= 8
}

// extOf returns ".ext" or ".ext.map" at the end of p, or "".
func extOf(p []byte) []byte {
	q := p
	if bytes.HasSuffix(q, []byte(".map")) {
		q = q[:len(q)-4]
	}
	i := bytes.LastIndexByte(q, '.')
	if i < 0 || bytes.IndexByte(q[i:], '/') >= 0 {
		return nil
	}
	return p[i:]
}

func (propshaft) parse(in *input, r *resolver) error {
	d := in.doc
	base := in.prefix("/assets/")
	d.each(in.root, func(k, v jv) {
		switch v.kind {
		case jStr:
			r.add(base, true, d.bytes(v), nil)
		case jObj:
			dp := d.get(v, "digested_path")
			if dp.kind != jStr {
				r.skip(d.string(k), "digested_path is "+dp.kind.String()+", not a path")
				return
			}
			var integ []byte
			if i := d.get(v, "integrity"); i.kind == jStr {
				integ = normSRI(d.bytes(i))
			}
			r.add(base, true, d.bytes(dp), integ)
		default:
			r.skipKey(d, k, v)
		}
	})
	return nil
}
