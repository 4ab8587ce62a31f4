package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/polygraph-dev/polygraph/internal/safeio"
)

// KindHelm is the kind of a Helm chart directory, checked by rendering it with its default
// values.
const KindHelm Kind = "helm-chart"

// HelmRenderer renders the Helm chart in dir with its default values and returns the rendered
// manifests, as `helm template` prints them (each document after a "# Source: CHART/PATH"
// comment). It returns ErrHelmNotInstalled when it has no way to render.
type HelmRenderer func(ctx context.Context, dir string) ([]byte, error)

// ErrHelmNotInstalled is returned by HelmBinary when no helm executable is on PATH.
var ErrHelmNotInstalled = errors.New("helm is not installed")

// HelmTimeout bounds one `helm template` run (within the check's own deadline).
const HelmTimeout = 60 * time.Second

// HelmBinary renders a chart with the helm executable on PATH: `helm template` with the chart's
// default values, never updating dependencies (no network: a chart whose dependencies are not
// in its charts/ directory fails to render), within HelmTimeout, its output capped at
// MaxFileSize. Helm's home directories point at an empty temporary directory, so no plugin,
// repository list or registry login of the machine is used.
func HelmBinary(ctx context.Context, dir string) ([]byte, error) {
	bin, err := exec.LookPath("helm")
	if err != nil {
		return nil, ErrHelmNotInstalled
	}
	home, err := os.MkdirTemp("", "polygraph-helm-")
	if err != nil {
		return nil, fmt.Errorf("rendering chart %q: %w", dir, err)
	}
	defer os.RemoveAll(home)
	run, cancel := context.WithTimeout(ctx, HelmTimeout)
	defer cancel()
	cmd := exec.CommandContext(run, bin, "template", "polygraph", dir)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"HELM_PLUGINS="+filepath.Join(home, "plugins"),
		"HELM_REGISTRY_CONFIG="+filepath.Join(home, "registry.json"),
		"HELM_REPOSITORY_CONFIG="+filepath.Join(home, "repositories.yaml"))
	stdout := &capBuffer{max: MaxFileSize, cancel: cancel}
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case stdout.over:
		return nil, fmt.Errorf("rendering chart %q: helm template printed more than %d MiB", dir, MaxFileSize>>20)
	case run.Err() != nil:
		return nil, fmt.Errorf("rendering chart %q: helm template did not finish within %v", dir, HelmTimeout)
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:] // helm's last line is the error; earlier ones are warnings
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("rendering chart %q: %s", dir, shorten(msg))
	}
	return stdout.Bytes(), nil
}

// capBuffer keeps at most max bytes, then refuses more and cancels the command. The buffer is
// a field, not embedded: an embedded bytes.Buffer's ReadFrom would let io.Copy bypass Write.
type capBuffer struct {
	buf    bytes.Buffer
	max    int
	over   bool
	cancel context.CancelFunc
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		if b.cancel != nil {
			b.cancel()
		}
		return 0, errors.New("output too large")
	}
	return b.buf.Write(p)
}

func (b *capBuffer) String() string { return b.buf.String() }

func (b *capBuffer) Bytes() []byte { return b.buf.Bytes() }

// isChart reports whether dir holds a Chart.yaml file.
func isChart(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// chartImages renders the chart in dir and returns the images of the rendered manifests, each
// placed where it came from: the values.yaml value that names it (the tag when a value is the
// tag, else the repository), Chart.yaml's appVersion when that is the tag, the template where
// the image is written, or else the template's first image: line. A chart that cannot be
// rendered is one unresolved image at Chart.yaml saying why.
func chartImages(ctx context.Context, dir string, render HelmRenderer) ([]Image, error) {
	chartFile := filepath.ToSlash(filepath.Join(dir, "Chart.yaml"))
	meta, _ := readYAMLFile(filepath.Join(dir, "Chart.yaml"))
	name := str(get(meta, "name"))
	if name == "" {
		name = filepath.Base(dir)
	}
	out, err := render(ctx, dir)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		why := err.Error()
		if errors.Is(err, ErrHelmNotInstalled) {
			why = fmt.Sprintf("helm is not installed: render with `helm template %s | polygraph policy check -`", dir)
		}
		return []Image{{File: chartFile, Line: 1, Column: 1, Where: "Helm chart " + name, Kind: KindHelm, Unresolved: why}}, nil
	}
	_, imgs, err := Extract(ctx, "helm template "+dir, out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []Image{{File: chartFile, Line: 1, Column: 1, Where: "Helm chart " + name, Kind: KindHelm,
			Unresolved: fmt.Sprintf("the output of helm template does not parse: %v", err)}}, nil
	}
	o := &chartOrigin{dir: dir, chartFile: chartFile, name: name, meta: meta, rendered: strings.Split(string(out), "\n")}
	o.values, _ = readYAMLFile(filepath.Join(dir, "values.yaml"))
	for i := range imgs {
		o.place(&imgs[i])
	}
	return imgs, nil
}

// chartOrigin places the images of a rendered chart in the chart's files.
type chartOrigin struct {
	dir, chartFile, name string
	meta, values         *yaml.Node
	rendered             []string
}

func (o *chartOrigin) place(img *Image) {
	src := o.source(img.Line)
	img.Kind = KindHelm
	img.Where = fmt.Sprintf("%s (chart %s, %s)", img.Where, o.name, src)
	ref := img.Ref
	if ref == "" {
		ref = img.Raw
	}
	tag := tagOf(ref)
	valuesFile := filepath.ToSlash(filepath.Join(o.dir, "values.yaml"))
	var best, tagged *valueLeaf
	for _, leaf := range imageLeaves(o.values, nil, "", nil) {
		switch {
		case tag != "" && leaf.Value == tag:
			// Of the values equal to the tag, prefer one beside the image's repository.
			if tagged == nil || leaf.paired(ref) && !tagged.paired(ref) {
				tagged = leaf
			}
		case strings.Contains(ref, leaf.Value) && (best == nil || len(leaf.Value) > len(best.Value)):
			best = leaf
		}
	}
	if tagged != nil {
		o.at(img, valuesFile, tagged.Node)
		return
	}
	if v := get(o.meta, "appVersion"); tag != "" && v != nil && str(v) == tag {
		o.at(img, o.chartFile, v)
		return
	}
	if best != nil {
		o.at(img, valuesFile, best.Node)
		return
	}
	if src != "" {
		// A template may print its own "# Source:" line: only files inside the chart are read.
		rel := filepath.FromSlash(strings.TrimPrefix(src, o.name+"/"))
		file := filepath.Join(o.dir, rel)
		if data, err := safeio.ReadFile(file, MaxFileSize); err == nil && filepath.IsLocal(rel) {
			if line, col := findInText(string(data), ref, "image:"); line > 0 {
				img.File, img.Line, img.Column = filepath.ToSlash(file), line, col
				return
			}
		}
	}
	img.File, img.Line, img.Column = o.chartFile, 1, 1
}

// at places img at the value n of file.
func (o *chartOrigin) at(img *Image, file string, n *yaml.Node) {
	img.File, img.Line, img.Column = file, n.Line, n.Column
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		img.Column++ // at the value, past its opening quote
	}
}

// source returns the template path of the "# Source:" comment above line of the rendered
// output.
func (o *chartOrigin) source(line int) string {
	for i := min(line, len(o.rendered)) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(strings.TrimSpace(o.rendered[i]), "# Source: "); ok {
			return s
		}
	}
	return ""
}

// tagOf returns the tag of a reference ("" without one).
func tagOf(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}

// valueLeaf is a scalar of values.yaml with the mapping it is in.
type valueLeaf struct {
	*yaml.Node
	parent *yaml.Node
}

// paired reports whether another value of the leaf's mapping (the repository beside a tag) is
// part of ref.
func (l *valueLeaf) paired(ref string) bool {
	for _, kv := range entries(l.parent) {
		v := deref(kv[1])
		if v != nil && v != l.Node && v.Kind == yaml.ScalarNode && v.Value != "" && strings.Contains(ref, v.Value) {
			return true
		}
	}
	return false
}

// imageLeaves returns the non-empty scalar values of values.yaml under a key that names an
// image or a part of one (image, repository, registry, tag, digest, version).
func imageLeaves(n, parent *yaml.Node, key string, out []*valueLeaf) []*valueLeaf {
	n = deref(n)
	if n == nil {
		return out
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = imageLeaves(c, n, key, out)
		}
	case yaml.MappingNode:
		for _, kv := range entries(n) {
			k := kv[0].Value
			if strings.Contains(strings.ToLower(key), "image") {
				k = key + "." + k // keys under an image: mapping count as image keys
			}
			out = imageLeaves(kv[1], n, k, out)
		}
	case yaml.ScalarNode:
		l := strings.ToLower(key)
		last := l[strings.LastIndex(l, ".")+1:]
		if n.Tag == "!!str" && n.Value != "" && (strings.Contains(l, "image") ||
			last == "repository" || last == "registry" || last == "tag" || last == "digest" || last == "version") {
			out = append(out, &valueLeaf{Node: n, parent: parent})
		}
	}
	return out
}

// findInText returns the line and column of the first occurrence of s in text, or else of the
// first value after key; 0 when neither is there.
func findInText(text, s, key string) (int, int) {
	lines := strings.Split(text, "\n")
	for _, want := range []string{s, key} {
		for i, l := range lines {
			if k := strings.Index(l, want); k >= 0 && want != "" {
				if want == key {
					k += len(key)
					k += len(l[k:]) - len(strings.TrimLeft(l[k:], " \t"))
				}
				return i + 1, len([]rune(l[:k])) + 1
			}
		}
	}
	return 0, 0
}

// readYAMLFile reads a small YAML file of a chart (Chart.yaml, values.yaml) as a node tree,
// through the size cap and the document limits.
func readYAMLFile(path string) (*yaml.Node, error) {
	data, err := safeio.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	docs, err := decodeYAML(data)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	if why, _ := checkDoc(docs[0]); why != "" {
		return nil, errors.New(why)
	}
	return docs[0], nil
}
