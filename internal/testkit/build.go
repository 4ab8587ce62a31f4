package testkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Build is one build of the front end: the manifest an instance serves and the asset paths it
// references (root-relative, as the CDN serves them under its prefix).
type Build struct {
	Name        string
	Manifest    []byte
	ContentType string
	Assets      []string
}

// CRABuild makes a create-react-app asset-manifest.json with n files whose content hashes
// derive from name, so two builds with different names share no asset. pad lengthens the
// file names (a real 200-entry manifest is about 25 KB with pad 40).
func CRABuild(name string, n, pad int) *Build {
	b := &Build{Name: name, ContentType: "application/json"}
	files := map[string]string{}
	var entry []string
	filler := strings.Repeat("x", pad)
	for i := range n {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", name, i)))
		hash := hex.EncodeToString(h[:])[:8]
		var key, p string
		switch {
		case i == 0:
			key, p = "main.js", "static/js/main."+hash+".js"
			entry = append(entry, p)
		case i == 1:
			key, p = "main.css", "static/css/main."+hash+".css"
			entry = append(entry, p)
		case i%5 == 0:
			key = fmt.Sprintf("static/media/img-%d-%s.png", i, filler)
			p = fmt.Sprintf("static/media/img-%d-%s.%s.png", i, filler, hash)
		default:
			key = fmt.Sprintf("static/js/%d.chunk-%s.js", i, filler)
			p = fmt.Sprintf("static/js/%d.chunk-%s.%s.js", i, filler, hash)
		}
		files[key] = "/" + p
		b.Assets = append(b.Assets, "/"+p)
	}
	var buf bytes.Buffer
	buf.WriteString("{\n  \"files\": {\n")
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		fmt.Fprintf(&buf, "    %q: %q", k, files[k])
		if i < len(keys)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("  },\n  \"entrypoints\": [\n")
	for i, e := range entry {
		fmt.Fprintf(&buf, "    %q", e)
		if i < len(entry)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("  ]\n}\n")
	b.Manifest = buf.Bytes()
	sort.Strings(b.Assets)
	return b
}

// AssetBody is the bytes the CDN serves for an asset path (deterministic, small).
func AssetBody(p string) []byte { return []byte("/* " + p + " */\n") }

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}
