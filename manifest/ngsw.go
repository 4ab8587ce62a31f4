package manifest

// ngsw is Angular's service-worker manifest ngsw.json: hashTable maps every file's URL
// (root-relative, --base-href included) to the SHA-1 of its bytes; assetGroups[].urls list
// the same files. assetGroups[].patterns and dataGroups are regexes and are skipped;
// timestamp changes every build and is ignored.
type ngsw struct{}

func init() { register(ngsw{}) }

func (ngsw) format() Format { return "ngsw" }

func (ngsw) detect(in *input) bool {
	d := in.doc
	if d.get(in.root, "hashTable").kind != jObj {
		return false
	}
	return d.get(in.root, "configVersion").kind == jNum || d.get(in.root, "assetGroups").kind == jArr
}

func (ngsw) parse(in *input, r *resolver) error {
	d := in.doc
	ht := d.get(in.root, "hashTable")
	if ht.kind != jObj {
		return &InvalidError{Reason: "hashTable is " + ht.kind.String() + ", not an object"}
	}
	d.each(ht, func(k, v jv) {
		var integ []byte
		if v.kind == jStr && hexDigest("sha1", d.bytes(v)) {
			integ = r.integ("sha1", d.bytes(v))
		} else {
			r.warnf("hashTable entry %q has no SHA-1 (%s); not checked", d.string(k), v.kind)
		}
		r.add("/", false, d.bytes(k), integ)
	})
	for _, g := range d.members(d.get(in.root, "assetGroups")) {
		in.strElems(d.get(g.val, "urls"), r, "/", false, "assetGroups urls")
		for _, p := range d.members(d.get(g.val, "patterns")) {
			r.skip(d.string(p.val), "assetGroups pattern: a regex, not a URL")
		}
	}
	for _, g := range d.members(d.get(in.root, "dataGroups")) {
		for _, p := range d.members(d.get(g.val, "patterns")) {
			r.skip(d.string(p.val), "dataGroups pattern: an API cache rule, not an asset")
		}
	}
	return nil
}
