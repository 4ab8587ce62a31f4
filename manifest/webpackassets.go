package manifest

// webpackAssets is webpack-assets-manifest (Webpacker, Shakapacker): string values, or
// {src, integrity} objects with integrity on, plus entrypoints.<name>.assets.<type>[]. Paths
// carry the public path; relative ones resolve against the manifest's directory.
type webpackAssets struct{}

func init() { register(webpackAssets{}) }

func (webpackAssets) format() Format { return "webpack-assets" }

func (webpackAssets) detect(in *input) bool {
	d := in.doc
	if eps := d.get(in.root, "entrypoints"); eps.kind == jObj && d.len(eps) > 0 {
		ok := true
		d.each(eps, func(_, v jv) {
			ok = ok && v.kind == jObj && d.get(v, "assets").kind == jObj
		})
		if ok {
			return true
		}
	}
	src := false
	d.each(in.root, func(_, v jv) {
		src = src || (v.kind == jObj && d.get(v, "src").kind == jStr && d.get(v, "file").kind == jNone)
	})
	return src
}

func (webpackAssets) parse(in *input, r *resolver) error {
	d := in.doc
	base := dirOf(in.opts.Path)
	add := func(k, v jv) {
		switch v.kind {
		case jStr:
			r.add(base, false, d.bytes(v), nil)
		case jObj:
			src := d.get(v, "src")
			if src.kind != jStr {
				r.skip(d.string(k), "object without a src path")
				return
			}
			var integ []byte
			if i := d.get(v, "integrity"); i.kind == jStr {
				if integ = normSRI(d.bytes(i)); integ == nil && len(d.bytes(i)) > 0 {
					r.warnf("integrity of %q is not a usable SRI value; not checked", d.string(src))
				}
			}
			r.add(base, false, d.bytes(src), integ)
		default:
			r.skipKey(d, k, v)
		}
	}
	d.each(in.root, func(k, v jv) {
		if string(d.bytes(k)) == "entrypoints" && v.kind == jObj {
			d.each(v, func(_, ep jv) {
				d.each(d.get(ep, "assets"), func(_, list jv) {
					if list.kind != jArr {
						return
					}
					for _, e := range d.members(list) {
						add(k, e.val)
					}
				})
			})
			return
		}
		add(k, v)
	})
	return nil
}
