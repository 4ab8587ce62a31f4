package manifest

import "strings"

// vite is Vite's build manifest (.vite/manifest.json, or manifest.json up to Vite 4): chunks
// keyed by source id, with file, css[] and assets[] relative to the output directory, which
// is where the manifest's .vite/ directory sits (or probe.manifest.asset_prefix). imports and
// dynamicImports hold manifest keys, not paths, and are not read.
type vite struct{}

func init() { register(vite{}) }

func (vite) format() Format { return "vite" }

func (vite) detect(in *input) bool {
	d := in.doc
	file := false
	ok := in.allValues(in.root, func(v jv) bool {
		if v.kind != jObj || d.get(v, "digested_path").kind != jNone {
			return false
		}
		f := d.get(v, "file")
		file = file || f.kind == jStr
		return f.kind == jStr || f.kind == jNone
	})
	return ok && file
}

func (vite) parse(in *input, r *resolver) error {
	d := in.doc
	base := in.opts.AssetPrefix
	if base == "" {
		base = strings.TrimSuffix(dirOf(in.opts.Path), ".vite/")
	} else if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	d.each(in.root, func(k, v jv) {
		if v.kind != jObj {
			r.skipKey(d, k, v)
			return
		}
		switch f := d.get(v, "file"); f.kind {
		case jStr:
			r.add(base, true, d.bytes(f), nil)
		case jNone:
		default:
			r.skip(d.string(k), "file is "+f.kind.String()+", not a path")
		}
		in.strElems(d.get(v, "css"), r, base, true, "css")
		in.strElems(d.get(v, "assets"), r, base, true, "assets")
	})
	return nil
}
