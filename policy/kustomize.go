package policy

import (
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// kustomization is what policy reads of a kustomization.yaml: its resources and its images
// overrides.
type kustomization struct {
	file      string // as named in Inputs
	resources []string
	images    []kustomizeImage
}

// kustomizeImage is one entry of a kustomization's images: list.
type kustomizeImage struct {
	name, newName, newTag, digest string
	// at is the value that decides the reference (digest, else newTag, else newName).
	at *yaml.Node
}

// isKustomization recognises a kustomization file by its name and content.
func isKustomization(name string, root *yaml.Node) bool {
	base := path.Base(name)
	if str(get(root, "kind")) == "Kustomization" {
		return true
	}
	return (base == "kustomization.yaml" || base == "kustomization.yml" || base == "Kustomization") &&
		(get(root, "resources") != nil || get(root, "images") != nil)
}

// readKustomization returns the kustomization a file holds, or nil.
func readKustomization(name string, data []byte) *kustomization {
	docs, err := decodeYAML(data)
	if err != nil || len(docs) != 1 {
		return nil
	}
	if why, _ := checkDoc(docs[0]); why != "" {
		return nil // Extract reported it
	}
	root := deref(docs[0])
	if root == nil || root.Kind != yaml.MappingNode || !isKustomization(name, root) {
		return nil
	}
	k := &kustomization{file: name}
	for _, r := range items(get(root, "resources")) {
		if s := str(r); s != "" {
			k.resources = append(k.resources, s)
		}
	}
	for _, it := range items(get(root, "images")) {
		e := kustomizeImage{name: str(get(it, "name")), newName: str(get(it, "newName")),
			newTag: str(get(it, "newTag")), digest: str(get(it, "digest"))}
		for _, key := range []string{"digest", "newTag", "newName"} {
			if n := get(it, key); n != nil && n.Kind == yaml.ScalarNode {
				e.at = n
				break
			}
		}
		if e.name != "" && e.at != nil {
			k.images = append(k.images, e)
		}
	}
	return k
}

// applyKustomizations rewrites the images of resources that kustomizations deploy: each image of
// a file that a root kustomization (one no other kustomization includes) reaches through its
// resources and bases is checked as that build deploys it, after the images overrides of every
// kustomization on the way (bases first, the overlay last), and reported at the override that
// decided it. A resource file deployed by several overlays is checked once per overlay.
func (in *Inputs) applyKustomizations(ks []*kustomization) {
	if len(ks) == 0 {
		return
	}
	byDir := map[string]*kustomization{}
	for _, k := range ks {
		byDir[path.Dir(k.file)] = k
	}
	included := map[*kustomization]bool{}
	for _, k := range ks {
		for _, r := range k.resources {
			if b := byDir[path.Join(path.Dir(k.file), r)]; b != nil {
				included[b] = true
			}
		}
	}
	// For every file reached, the chains of overrides (one per root build).
	chains := map[string][][]*kustomization{}
	var walk func(k *kustomization, chain []*kustomization, depth int)
	walk = func(k *kustomization, chain []*kustomization, depth int) {
		if depth > 16 {
			return // a cycle of bases; kustomize refuses it too
		}
		chain = append([]*kustomization{k}, chain...) // bases apply before the overlays
		for _, r := range k.resources {
			if strings.Contains(r, "://") || strings.HasPrefix(r, "github.com/") {
				continue // remote bases are not read
			}
			p := path.Join(path.Dir(k.file), r)
			if b := byDir[p]; b != nil {
				walk(b, chain, depth+1)
				continue
			}
			chains[p] = append(chains[p], chain)
		}
	}
	var roots []*kustomization
	for _, k := range ks {
		if !included[k] {
			roots = append(roots, k)
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].file < roots[j].file })
	for _, k := range roots {
		walk(k, nil, 0)
	}
	var out []Image
	for _, img := range in.Images {
		cs := chains[path.Clean(filepath.ToSlash(img.File))]
		if len(cs) == 0 || img.Kind != KindKubernetes || img.Ref == "" {
			out = append(out, img)
			continue
		}
		for _, chain := range cs {
			out = append(out, kustomized(img, chain))
		}
	}
	in.Images = out
}

// kustomized returns img as a chain of kustomizations deploys it.
func kustomized(img Image, chain []*kustomization) Image {
	ref := img.Ref
	var last *kustomization
	var lastAt *yaml.Node
	for _, k := range chain {
		for _, e := range k.images {
			name, rest := splitImageName(ref)
			if name != e.name {
				continue
			}
			if e.newName != "" {
				name = e.newName
			}
			switch {
			case e.digest != "":
				rest = "@" + e.digest
			case e.newTag != "":
				rest = ":" + e.newTag
			}
			ref = name + rest
			last, lastAt = k, e.at
			break
		}
	}
	root := chain[len(chain)-1]
	if last == nil {
		img.Where += " (deployed by " + root.file + ")"
		return img
	}
	line, col := position(lastAt)
	where := img.Where + " (" + img.File + ":" + strconv.Itoa(img.Line) + ", image set by " + last.file
	if root != last {
		where += ", deployed by " + root.file
	}
	return Image{File: last.file, Line: line, Column: col, Raw: lastAt.Value, Ref: ref, Where: where + ")",
		Kind: KindKubernetes}
}

// splitImageName splits a reference into its name and the :tag and/or @digest after it.
func splitImageName(ref string) (string, string) {
	name, rest := ref, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, rest = name[:i], name[i:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, rest = name[:i], name[i:]+rest
	}
	return name, rest
}
