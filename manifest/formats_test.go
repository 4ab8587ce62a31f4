package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// sample is one real manifest in testdata, the path it is served at and what it references.
type sample struct {
	name   string
	file   string
	path   string // Options.Path; default "/" + base name of file
	format Format
	opts   Options
	// refs are every asset, sorted; integ the integrity of some of them.
	refs  []string
	integ map[string]string
	// skipped are values that must be among the skips.
	skipped []string
	// public is where the asset files lie, for the integrity check: ref path -> public+path.
	public string
}

var samples = []sample{
	{
		name: "webpack flat", file: "webpack/manifest.json", format: "webpack",
		refs: []string{"/static/assets-manifest.json", "/static/css/main.4989384e.css", "/static/js/chart.fa35ba8f.chunk.js",
			"/static/js/main.41e1f6fc.js", "/static/media/logo.f1ce6ec21d3bd7163b5a.png"},
		skipped: []string{"/static/js/main.41e1f6fc.js.map"},
	},
	{
		name: "create-react-app", file: "webpack/asset-manifest.json", format: "webpack",
		refs: []string{"/static/assets-manifest.json", "/static/css/main.4989384e.css", "/static/js/chart.fa35ba8f.chunk.js",
			"/static/js/main.41e1f6fc.js", "/static/media/logo.f1ce6ec21d3bd7163b5a.png"},
	},
	{
		// PUBLIC_URL is baked into files and not into entrypoints; both resolve the same.
		name: "create-react-app with a CDN PUBLIC_URL", file: "webpack/cdn/asset-manifest.json", format: "webpack",
		refs: []string{"https://cdn.example.com/app/assets-manifest.json", "https://cdn.example.com/app/css/main.4989384e.css",
			"https://cdn.example.com/app/js/chart.fa35ba8f.chunk.js", "https://cdn.example.com/app/js/main.6aef7f25.js",
			"https://cdn.example.com/app/media/logo.f1ce6ec21d3bd7163b5a.png"},
	},
	{
		name: "create-react-app with a BOM", file: "edge-cases/bom-asset-manifest.json", path: "/asset-manifest.json", format: "webpack",
		refs: []string{"/assets-manifest.json", "/index.html", "/static/css/chart.d0d84b94.chunk.css", "/static/css/main.72cfa10b.css",
			"/static/js/chart.b193c4bb.chunk.js", "/static/js/main.b1616513.js", "/static/media/bg.778d52a2e02cada3514a.svg",
			"/static/media/logo.f09fe3c1e00937854ce8.svg", "/static/media/photo.0b035c2711f36bad3336.png"},
		skipped: []string{"/static/js/main.b1616513.js.map"},
	},
	{
		name: "webpack-assets-manifest with integrity", file: "webpack/assets-manifest.json", format: "webpack-assets",
		refs: []string{"/static/css/main.4989384e.css", "/static/js/chart.fa35ba8f.chunk.js", "/static/js/main.41e1f6fc.js",
			"/static/media/logo.f1ce6ec21d3bd7163b5a.png"},
		integ: map[string]string{
			"/static/css/main.4989384e.css":               "sha384-RCskyNii5sqxvP6FFa8f/q0M1dsV9RFAgpxQR8wmDD7oXVnb8ns36G+jsgljTbQC",
			"/static/media/logo.f1ce6ec21d3bd7163b5a.png": "",
		},
		public: "webpack",
	},
	{
		name: "webpack-assets-manifest on a CDN", file: "webpack/cdn/assets-manifest.json", format: "webpack-assets",
		refs: []string{"https://cdn.example.com/app/css/main.4989384e.css", "https://cdn.example.com/app/js/chart.fa35ba8f.chunk.js",
			"https://cdn.example.com/app/js/main.6aef7f25.js", "https://cdn.example.com/app/media/logo.f1ce6ec21d3bd7163b5a.png"},
	},
	{
		name: "webpacker", file: "webpacker/public/packs/manifest.json", path: "/packs/manifest.json", format: "webpack-assets",
		refs: []string{"/packs/css/application-3c2ea7e2.css", "/packs/js/application-6a7cfa51e48a2b4bb6b5.js",
			"/packs/js/runtime-1d3d4ba8f0e7d8b2b1a1.js",
			"/packs/js/vendors-node_modules_rails_ujs_lib_assets_compiled_rails-ujs_js-9c4ab8a1b2c3d4e5f6a7.chunk.js",
			"/packs/media/images/logo-58b3fd4c91b0c6b1b2c8.svg"},
	},
	{
		name: "vite", file: "vite/manifest.json", path: "/.vite/manifest.json", format: "vite",
		refs: []string{"/assets/bg-DRCIL8Ub.png", "/assets/index-BMSN9XgU.js", "/assets/index-DgNMkiSQ.css",
			"/assets/lazy-DXZyQQLh.css", "/assets/lazy-IAPe6vlz.js", "/assets/logo-DvMiykSB.svg"},
	},
	{
		name: "vite with base /app/", file: "vite/manifest-base-app.json", path: "/app/.vite/manifest.json", format: "vite",
		refs: []string{"/app/assets/bg-DRCIL8Ub.png", "/app/assets/index-CtSFZfBw.css", "/app/assets/index-G2UfF8qZ.js",
			"/app/assets/lazy-CngFqY-z.js", "/app/assets/lazy-DXZyQQLh.css", "/app/assets/logo-DvMiykSB.svg"},
	},
	{
		name: "vite with asset_prefix", file: "vite/manifest.json", path: "/.vite/manifest.json", format: "vite",
		opts: Options{AssetPrefix: "/v"},
		refs: []string{"/v/assets/bg-DRCIL8Ub.png", "/v/assets/index-BMSN9XgU.js", "/v/assets/index-DgNMkiSQ.css",
			"/v/assets/lazy-DXZyQQLh.css", "/v/assets/lazy-IAPe6vlz.js", "/v/assets/logo-DvMiykSB.svg"},
	},
	{
		name: "ngsw", file: "ngsw/ngsw.json", format: "ngsw",
		refs:    []string{"/shop/assets/logo.svg", "/shop/favicon.ico", "/shop/index.html", "/shop/main-ABC123.js", "/shop/styles-XYZ.css"},
		integ:   map[string]string{"/shop/main-ABC123.js": "sha1:4f34d4184dfcb3ee7509f2f48258ce9241d98107"},
		skipped: []string{`\/api\/.*`},
		public:  "ngsw/dist",
	},
	{
		name: "sprockets 4", file: "sprockets/public/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json",
		path: "/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json", format: "sprockets",
		refs: []string{
			"/assets/admin/dashboard-2a28073abcfc1d7c1e86e5978a7e10c8ce206886f7752d295741df0f99b059c5.js",
			"/assets/application-1b65dc2b36f8744743513330664671d40c725e47e453bc6f02fb37677e81005c.css",
			"/assets/application-67da22af295378469d4553e012970f16d5c663f3922f27b404e90531ee698847.js",
			"/assets/fonts/icons-27e386f4c38c40c7d851941dfb4b98593af0d5cd71368262bc498822b640d6b6.woff2",
			"/assets/logo-f502af1820bfc04f67ff9daac2ae7a392e23c7cb6c3dfa5422db05fd9538be19.svg",
		},
		integ:  map[string]string{"/assets/logo-f502af1820bfc04f67ff9daac2ae7a392e23c7cb6c3dfa5422db05fd9538be19.svg": "sha256:f502af1820bfc04f67ff9daac2ae7a392e23c7cb6c3dfa5422db05fd9538be19"},
		public: "sprockets/public",
	},
	{
		name: "sprockets 2", file: "sprockets/variants/manifest-8d4b1e2ac3f5a6b7c8d9e0f1a2b3c4d5.json", format: "sprockets",
		opts: Options{AssetPrefix: "https://assets.example.com/assets"},
		refs: []string{"https://assets.example.com/assets/application-7b3b606e899799d2905110504f44b87c.js",
			"https://assets.example.com/assets/application-b73d45f8601a3a8f1cb340e89d7db3d2.css",
			"https://assets.example.com/assets/favicon-6f206dba3a91048c59cd4c1e47c9b9ae.ico"},
		integ: map[string]string{"https://assets.example.com/assets/favicon-6f206dba3a91048c59cd4c1e47c9b9ae.ico": "md5:6f206dba3a91048c59cd4c1e47c9b9ae"},
	},
	{
		name: "propshaft", file: "propshaft/public/assets/.manifest.json", path: "/assets/.manifest.json", format: "propshaft",
		refs: []string{"/assets/application-222abfa1.js", "/assets/application-cd86cfe2.css", "/assets/controllers/hello_controller-8fa25a0b.js",
			"/assets/icons/rails-3b47d14a.svg", "/assets/trix-6a3c1f9e.digested.js", "/assets/turbo.min-e0144b93.js"},
		integ: map[string]string{
			"/assets/application-cd86cfe2.css": "sha384-gUc5aZAFosJImn5YJsbckRR+rHdb4sM4sMp0aqELwcOTZAZ7nXE0b6+2dQIeQKKI",
			"/assets/icons/rails-3b47d14a.svg": "",
		},
		skipped: []string{"application-8096d018.js.map"},
		public:  "propshaft/public",
	},
	{
		name: "propshaft with source maps", file: "propshaft/public/assets/.manifest.json", path: "/assets/.manifest.json", format: "propshaft",
		opts: Options{SourceMaps: true},
		refs: []string{"/assets/application-222abfa1.js", "/assets/application-8096d018.js.map", "/assets/application-cd86cfe2.css",
			"/assets/controllers/hello_controller-8fa25a0b.js", "/assets/icons/rails-3b47d14a.svg", "/assets/trix-6a3c1f9e.digested.js",
			"/assets/turbo.min-e0144b93.js"},
		public: "propshaft/public",
	},
	{
		name: "propshaft legacy flat", file: "propshaft/variants/.manifest.legacy-flat.json", path: "/assets/.manifest.json", format: "propshaft",
		refs: []string{"/assets/application-222abfa1.js", "/assets/application-cd86cfe2.css", "/assets/controllers/hello_controller-8fa25a0b.js",
			"/assets/icons/rails-3b47d14a.svg", "/assets/trix-6a3c1f9e.digested.js", "/assets/turbo.min-e0144b93.js"},
	},
	{
		name: "propshaft legacy flat, any name", file: "propshaft/variants/.manifest.legacy-flat.json", path: "/assets/manifest.json", format: "propshaft",
		refs: []string{"/assets/application-222abfa1.js", "/assets/application-cd86cfe2.css", "/assets/controllers/hello_controller-8fa25a0b.js",
			"/assets/icons/rails-3b47d14a.svg", "/assets/trix-6a3c1f9e.digested.js", "/assets/turbo.min-e0144b93.js"},
	},
	{
		name: "laravel mix 6", file: "laravel-mix/public/mix-manifest.json", format: "mix",
		refs: []string{"/css/app.css?id=387c778dcecbd4ade3ae30ae2c31f5bf", "/images/logo.png?id=dc7b97b363d63f0eb8d4686afa2bc39b",
			"/js/app.js?id=7cf6a3358e2905de4e6444adafc834e0", "/js/chunks/settings.js", "/js/manifest.js?id=833bbffdc1cf3b4625ca4a60ad95cc02",
			"/js/vendor.js?id=88d9a1f8de72a5c56dfea186ef87677c"},
		integ:  map[string]string{"/js/app.js?id=7cf6a3358e2905de4e6444adafc834e0": "md5:7cf6a3358e2905de4e6444adafc834e0", "/js/chunks/settings.js": ""},
		public: "laravel-mix/public",
	},
	{
		name: "laravel mix 5", file: "laravel-mix/variants/mix-manifest.mix5-20hex.json", path: "/mix-manifest.json", format: "mix",
		refs: []string{"/css/app.css?id=387c778dcecbd4ade3ae", "/images/logo.png?id=dc7b97b363d63f0eb8d4", "/js/app.js?id=7cf6a3358e2905de4e64",
			"/js/manifest.js?id=833bbffdc1cf3b4625ca", "/js/vendor.js?id=88d9a1f8de72a5c56dfe"},
		integ:  map[string]string{"/js/app.js?id=7cf6a3358e2905de4e64": "md5:7cf6a3358e2905de4e64"},
		public: "laravel-mix/public",
	},
	{
		name: "laravel mix unversioned", file: "laravel-mix/variants/mix-manifest.unversioned.json", format: "mix",
		refs: []string{"/css/app.css", "/images/logo.png", "/js/app.js", "/js/chunks/settings.js", "/js/manifest.js", "/js/vendor.js"},
	},
	{
		name: "next build-manifest", file: "nextjs/build-manifest.json", format: "nextjs",
		refs: []string{"/_next/static/chunks/fd9d1056-749e5812300142af.js", "/_next/static/chunks/framework-244f580fb294f19a.js",
			"/_next/static/chunks/main-abab290f177bd749.js", "/_next/static/chunks/main-app-9167ffb4b107a8d7.js",
			"/_next/static/chunks/pages/_app-72b849fbd24ac258.js", "/_next/static/chunks/pages/_error-7ba65e1336b92748.js",
			"/_next/static/chunks/pages/about-0b914a097d3b0164.js", "/_next/static/chunks/pages/index-d569e844a40873c5.js",
			"/_next/static/chunks/polyfills-42372ed130431b0a.js", "/_next/static/chunks/webpack-1b94650512334e97.js",
			"/_next/static/hfZa8C0_-1tH9B913nQzy/_buildManifest.js", "/_next/static/hfZa8C0_-1tH9B913nQzy/_ssgManifest.js"},
	},
	{
		name: "next app-build-manifest under a basePath", file: "nextjs/app-build-manifest.json", format: "nextjs",
		opts: Options{AssetPrefix: "/docs/_next/"},
		refs: []string{"/docs/_next/static/chunks/0bd6d505-af16539154dc4964.js", "/docs/_next/static/chunks/255-c0de0a5e9a7eb8eb.js",
			"/docs/_next/static/chunks/894-28b3aae4e4ab9967.js", "/docs/_next/static/chunks/app/_not-found/page-85ba0b71777fe94c.js",
			"/docs/_next/static/chunks/app/docs/[...slug]/page-a7f40512b2d5a4a4.js", "/docs/_next/static/chunks/app/layout-3600947785730f5f.js",
			"/docs/_next/static/chunks/app/page-d4f4e64327f71fb5.js", "/docs/_next/static/chunks/main-app-164fa8ae60fe234c.js",
			"/docs/_next/static/chunks/webpack-ff17ea5d401f0561.js", "/docs/_next/static/css/caf79f01b44b7cee.css"},
	},
	{
		name: "parcel", file: "parcel/parcel-manifest.json", format: "parcel",
		refs: []string{"/static/index.html", "/static/lazy.eab99d5b.js", "/static/parcel.a45e8787.css", "/static/parcel.ccfe78b0.js"},
	},
	{
		name: "next index.html", file: "nextjs/index.html", path: "/", format: "html",
		refs: []string{"/_next/static/chunks/framework-244f580fb294f19a.js", "/_next/static/chunks/main-abab290f177bd749.js",
			"/_next/static/chunks/pages/_app-72b849fbd24ac258.js", "/_next/static/chunks/pages/index-d569e844a40873c5.js",
			"/_next/static/chunks/polyfills-42372ed130431b0a.js", "/_next/static/chunks/webpack-1b94650512334e97.js",
			"/_next/static/hfZa8C0_-1tH9B913nQzy/_buildManifest.js", "/_next/static/hfZa8C0_-1tH9B913nQzy/_ssgManifest.js"},
	},
	{
		name: "vite index.html", file: "vite/index.html", format: "html",
		refs: []string{"/assets/index-BMSN9XgU.js", "/assets/index-DgNMkiSQ.css"},
	},
	{
		name: "parcel index.html without head", file: "parcel/index.html", path: "/static/index.html", format: "html",
		refs: []string{"/static/lazy.eab99d5b.js", "/static/parcel.a45e8787.css", "/static/parcel.ccfe78b0.js"},
	},
	{
		name: "odd URLs", file: "edge-cases/odd-urls-flat-manifest.json", path: "/manifest.json", format: "webpack",
		refs: []string{"//cdn.example.net/app/static/js/vendor.5e6f7a8b.js", "/asset-manifest.json", "/index.html", "/static/js/dotrel.99aa88bb.js", "/static/js/legacy.js?v=20240301",
			"/static/js/main.1a2b3c4d.js.gz", "/static/js/relative.33445566.js", "/static/js/win.77665544.js",
			"/static/media/caf%C3%A9.1f2e3d4c.png", "/static/media/logo%20(1).9a8b7c6d.png", "/static/media/sprite.0c1d2e3f.svg",
			"https://cdn.example.net/app/static/js/main.1a2b3c4d.js"},
		skipped: []string{"../../etc/passwd", "data:image/png;base64,iVBORw0KGgo=", "/static/media/", "", "null", "number", "nested"},
	},
}

func readSample(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s sample) options() Options {
	o := s.opts
	o.Path = s.path
	if o.Path == "" {
		o.Path = "/" + filepath.Base(s.file)
	}
	return o
}

func refs(as []model.Asset) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Ref
	}
	return out
}

func TestFormats(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			body := readSample(t, s.file)
			for _, f := range []Format{Auto, s.format} {
				m, err := Parse(f, body, s.options())
				if err != nil {
					t.Fatalf("Parse(%s): %v", f, err)
				}
				if m.Format != s.format {
					t.Errorf("Parse(%s) format = %s, want %s", f, m.Format, s.format)
				}
				if got := refs(m.Assets); !slices.Equal(got, s.refs) && !(len(got) == 0 && len(s.refs) == 0) {
					t.Errorf("Parse(%s) refs:\n got %q\nwant %q", f, got, s.refs)
				}
				for ref, want := range s.integ {
					i := slices.IndexFunc(m.Assets, func(a model.Asset) bool { return a.Ref == ref })
					if i < 0 || m.Assets[i].Integrity != want {
						t.Errorf("integrity of %s = %+v, want %q", ref, m.Assets, want)
					}
				}
				for _, v := range s.skipped {
					if !slices.ContainsFunc(m.Skipped, func(sk Skip) bool { return sk.Value == v && sk.Reason != "" }) {
						t.Errorf("%q not skipped; skipped: %+v", v, m.Skipped)
					}
				}
			}
		})
	}
}

// TestIntegrityOfSamples checks every integrity a sample carries against the placeholder
// asset files next to it: the parsers read the right hash for the right file.
func TestIntegrityOfSamples(t *testing.T) {
	for _, s := range samples {
		if s.public == "" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			m, err := Parse(s.format, readSample(t, s.file), s.options())
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for _, a := range m.Assets {
				if a.Integrity == "" {
					continue
				}
				p, _, _ := strings.Cut(a.Ref, "?")
				p = strings.TrimPrefix(p, "/shop") // ngsw --base-href
				body, err := os.ReadFile(filepath.Join("testdata", s.public, filepath.FromSlash(p)))
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := VerifyIntegrity(a.Integrity, body); err != nil {
					t.Errorf("%s: %v", a.Ref, err)
				}
				tampered := append(slices.Clone(body), '\n')
				var ie *IntegrityError
				if err := VerifyIntegrity(a.Integrity, tampered); !errors.As(err, &ie) {
					t.Errorf("%s tampered: got %v, want an *IntegrityError", a.Ref, err)
				}
				checked++
			}
			if checked == 0 {
				t.Error("no integrity checked")
			}
		})
	}
}

// TestDetectionMatrix parses every sample as every format. Auto-detection must find the
// sample's own format; a wrong explicit format is an *InvalidError, except where the shapes
// coincide and the result is the same assets (the flat webpack shape is also Mix's, Parcel's
// and legacy Propshaft's).
func TestDetectionMatrix(t *testing.T) {
	compatible := map[[2]Format]bool{
		{"mix", "webpack"}: true, {"parcel", "webpack"}: true, {"webpack", "parcel"}: true,
		{"propshaft", "webpack"}: true, {"propshaft", "mix"}: true, {"propshaft", "parcel"}: true,
		{"mix", "parcel"}: true, {"parcel", "mix"}: true, {"webpack", "mix"}: true,
	}
	formats := Formats()
	if len(formats) != 10 {
		t.Fatalf("Formats() = %v", formats)
	}
	for _, s := range samples {
		body := readSample(t, s.file)
		for _, f := range formats {
			m, err := Parse(f, body, s.options())
			var ie *InvalidError
			switch {
			case f == s.format:
				if err != nil {
					t.Errorf("%s as %s: %v", s.name, f, err)
				}
			case s.format == "html" || f == "html":
				// HTML as JSON is the SPA-fallback error; JSON as HTML has no elements.
				if s.format == "html" && !errors.As(err, &ie) {
					t.Errorf("%s as %s: got %v, want *InvalidError", s.name, f, err)
				}
				if f == "html" && err == nil && len(m.Assets) != 0 {
					t.Errorf("%s as html: found assets %v", s.name, refs(m.Assets))
				}
			case compatible[[2]Format{s.format, f}]:
				if err != nil && !errors.As(err, &ie) {
					t.Errorf("%s as %s: %v", s.name, f, err)
				}
			default:
				if !errors.As(err, &ie) {
					t.Errorf("%s as %s: got %v (%d assets), want *InvalidError", s.name, f, err, assetsLen(m))
				}
			}
		}
	}
}

func assetsLen(m *Manifest) int {
	if m == nil {
		return 0
	}
	return len(m.Assets)
}

// TestHTMLEdgeCases checks the torture-test page against expected-urls.tsv (made with parse5
// and WHATWG URL resolution), with our documented differences: fragments are dropped,
// directories (import-map prefixes) and data: URLs are skipped, and same-host URLs are
// root-relative refs.
func TestHTMLEdgeCases(t *testing.T) {
	const origin = "https://www.example.com"
	m, err := Parse(Auto, readSample(t, "html-edge-cases/index.html"), Options{Path: "/shop/products/index.html", Scheme: "https"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(readSample(t, "html-edge-cases/expected-urls.tsv")), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		u, _, _ := strings.Cut(f[1], "#")
		if strings.HasSuffix(u, "/") {
			continue // import-map prefix: a directory, skipped
		}
		u = strings.TrimPrefix(u, origin)
		if want[u] == "" {
			want[u] = f[2]
		}
	}
	got := map[string]string{}
	for _, a := range m.Assets {
		got[a.Ref] = a.Integrity
	}
	for u, integ := range want {
		g, ok := got[u]
		if !ok {
			t.Errorf("missing %s", u)
		} else if g != integ {
			t.Errorf("%s integrity = %q, want %q", u, g, integ)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("unexpected %s", u)
		}
	}
	for _, s := range []string{"data:,", "https://cdn.example.net/npm/lodash-es@4.17.21/"} {
		if !slices.ContainsFunc(m.Skipped, func(sk Skip) bool { return sk.Value == s }) {
			t.Errorf("%q not skipped: %+v", s, m.Skipped)
		}
	}
}

func TestCanonicalComparison(t *testing.T) {
	t.Run("ngsw timestamp", func(t *testing.T) {
		a := readSample(t, "ngsw/ngsw.json")
		b := []byte(strings.Replace(string(a), `"timestamp": 1795964295746`, `"timestamp": 1795999999999`, 1))
		if string(a) == string(b) {
			t.Fatal("timestamp not replaced")
		}
		sameAssets(t, "ngsw", a, b, Options{Path: "/shop/ngsw.json"})
	})
	t.Run("sprockets history", func(t *testing.T) {
		a := readSample(t, "sprockets/public/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json")
		// Another server kept one more superseded build in files, with other mtimes.
		b := strings.Replace(string(a), `{"files":{`, `{"files":{"application-00000000000000000000000000000000000000000000000000000000000000ff.js":{"logical_path":"application.js","mtime":"2023-01-01T00:00:00+00:00","size":1,"digest":"00000000000000000000000000000000000000000000000000000000000000ff"},`, 1)
		b = strings.ReplaceAll(b, "2024-03-04T09:15:4", "2024-03-05T11:11:1")
		sameAssets(t, "sprockets", a, []byte(b), Options{Path: "/assets/.sprockets-manifest.json"})
	})
	t.Run("key order and whitespace", func(t *testing.T) {
		a := []byte(`{"a.js": "/a.js", "b.css": "/b.css"}`)
		b := []byte("{\n  \"b.css\": \"/b.css\",\n  \"a.js\": \"/a.js\"\n}\n")
		sameAssets(t, "webpack", a, b, Options{Path: "/manifest.json"})
	})
}

func sameAssets(t *testing.T, f Format, a, b []byte, opts Options) {
	t.Helper()
	ma, err := Parse(f, a, opts)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Parse(f, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if AssetsSHA256(ma.Assets) != AssetsSHA256(mb.Assets) {
		t.Errorf("asset sets differ:\n%v\n%v", refs(ma.Assets), refs(mb.Assets))
	}
}
