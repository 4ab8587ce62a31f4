package manifest

// sprockets is the Rails Sprockets manifest (.sprockets-manifest-<hex>.json; manifest-<md5>.json
// in Sprockets 2). assets maps logical paths to the current digested files, under /assets/
// (or probe.manifest.asset_prefix). files also keeps superseded builds, so only its digest
// (SHA-256 hex; MD5 in Sprockets 2) is read, for the files assets names.
type sprockets struct{}

func init() { register(sprockets{}) }

func (sprockets) format() Format { return "sprockets" }

func (sprockets) detect(in *input) bool {
	d := in.doc
	files, assets := d.get(in.root, "files"), d.get(in.root, "assets")
	if files.kind != jObj || assets.kind != jObj {
		return false
	}
	objs := d.len(files) == 0 || in.allValues(files, func(v jv) bool { return v.kind == jObj })
	return objs && (d.len(assets) == 0 || mostlyStrings(d, assets))
}

func (sprockets) parse(in *input, r *resolver) error {
	d := in.doc
	assets := d.get(in.root, "assets")
	if assets.kind != jObj {
		return &InvalidError{Reason: "assets is " + assets.kind.String() + ", not an object"}
	}
	files := map[string]jv{}
	d.each(d.get(in.root, "files"), func(k, v jv) {
		if v.kind == jObj {
			files[string(d.bytes(k))] = v
		}
	})
	base := in.prefix("/assets/")
	d.each(assets, func(k, v jv) {
		if v.kind != jStr {
			r.skipKey(d, k, v)
			return
		}
		var integ []byte
		if f, ok := files[string(d.bytes(v))]; ok {
			dg := d.get(f, "digest")
			switch {
			case dg.kind == jStr && hexDigest("sha256", d.bytes(dg)):
				integ = r.integ("sha256", d.bytes(dg))
			case dg.kind == jStr && len(d.bytes(dg)) == 32 && hexDigest("md5", d.bytes(dg)):
				integ = r.integ("md5", d.bytes(dg))
			default:
				if i := d.get(f, "integrity"); i.kind == jStr {
					integ = normSRI(d.bytes(i))
				}
			}
		}
		r.add(base, true, d.bytes(v), integ)
	})
	return nil
}
