package manifest

// nextjs is Next.js's build-manifest.json (polyfillFiles, lowPriorityFiles, rootMainFiles,
// pages{route: [paths]}) and app-build-manifest.json ({"pages": {...}}). Paths are relative to
// .next/ and served under /_next/ (or probe.manifest.asset_prefix, e.g. "/base/_next/").
type nextjs struct{}

func init() { register(nextjs{}) }

func (nextjs) format() Format { return "nextjs" }

var nextLists = []string{"polyfillFiles", "devFiles", "ampDevFiles", "lowPriorityFiles", "rootMainFiles"}

func (nextjs) detect(in *input) bool {
	d := in.doc
	pages := d.get(in.root, "pages")
	if pages.kind != jObj {
		return false
	}
	if !in.allValues(pages, func(v jv) bool { return v.kind == jArr }) && d.len(pages) > 0 {
		return false
	}
	if d.len(pages) == 0 {
		if in.nameIs("build-manifest.json", "app-build-manifest.json") {
			return true
		}
		for _, l := range nextLists {
			if d.get(in.root, l).kind == jArr {
				return true
			}
		}
		return false
	}
	return true
}

func (nextjs) parse(in *input, r *resolver) error {
	d := in.doc
	base := in.prefix("/_next/")
	for _, l := range nextLists {
		in.strElems(d.get(in.root, l), r, base, true, l)
	}
	for _, tree := range []string{"pages", "rootMainFilesTree"} {
		d.each(d.get(in.root, tree), func(k, v jv) {
			in.strElems(v, r, base, true, tree+" "+d.string(k))
		})
	}
	return nil
}
