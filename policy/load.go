package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/polygraph-dev/polygraph/internal/safeio"
)

// MaxFileSize bounds how much of one input is read.
const MaxFileSize = 16 << 20

// Stdin is the name under which images read from standard input are reported.
const Stdin = "<stdin>"

// Inputs are the image references found in a set of files.
type Inputs struct {
	// Files lists the files recognised as deploy configuration, with their kind.
	Files map[string]Kind
	// Images are the references found, in file order.
	Images []Image
	// Skipped lists the files not checked, each with the reason: excluded by a glob, not
	// parseable, not a regular file, or over MaxFileSize (the last three only for files met
	// while walking a directory; named explicitly, they are errors).
	Skipped []Skip
}

// Skip is a file that was not checked, and why.
type Skip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// LoadOption configures Load.
type LoadOption func(*loadOptions)

type loadOptions struct {
	exclude []string
	helm    HelmRenderer
}

// WithHelmRenderer renders the Helm charts met (directories with a Chart.yaml) with r. The
// default is HelmBinary, the helm executable on PATH.
func WithHelmRenderer(r HelmRenderer) LoadOption {
	return func(o *loadOptions) { o.helm = r }
}

// WithExclude skips the files whose path matches one of the globs (policy.exclude,
// --skip-path), counting each in Inputs.Skipped. A glob uses path.Match syntax plus ** for any
// number of directories, and matches a path as given or any trailing part of it starting at a
// directory (testdata/** matches policy/testdata/bad.yaml); a directory it matches is skipped
// whole. The default excludes nothing.
func WithExclude(globs ...string) LoadOption {
	return func(o *loadOptions) { o.exclude = append(o.exclude, globs...) }
}

// Load reads every path (a file, a directory walked recursively, or "-" for stdin) and extracts
// the image references of the files it recognises by content. A file named explicitly that is
// not a regular file under MaxFileSize (a *safeio.Error) or that does not parse is an error; a
// file met in a directory that does not parse (a Helm template, say), is not a regular file or
// is too large is skipped, counted and logged. A directory holding a Chart.yaml is a Helm chart,
// rendered (WithHelmRenderer) rather than read file by file. A nil logger discards logs. Load returns the
// context's error when it ends, reading standard input included.
func Load(ctx context.Context, paths []string, stdin io.Reader, logger *slog.Logger, opts ...LoadOption) (*Inputs, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := loadOptions{helm: HelmBinary}
	for _, opt := range opts {
		opt(&o)
	}
	for _, g := range o.exclude {
		if err := validGlob(g); err != nil {
			return nil, err
		}
	}
	l := &loader{ctx: ctx, in: &Inputs{Files: map[string]Kind{}}, exclude: o.exclude, logger: logger, helm: o.helm}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p == "-" {
			if err := l.stdin(stdin); err != nil {
				return nil, err
			}
			continue
		}
		if err := l.path(p); err != nil {
			return nil, err
		}
	}
	l.in.applyKustomizations(l.kustomizations)
	return l.in, nil
}

type loader struct {
	ctx            context.Context
	in             *Inputs
	exclude        []string
	logger         *slog.Logger
	kustomizations []*kustomization
	helm           HelmRenderer
}

// skip records a skipped file; an exclusion is deliberate and logged at info level, anything
// else is a warning.
func (l *loader) skip(file, reason string) {
	if strings.HasPrefix(reason, "excluded by ") {
		l.logger.Info("skipping excluded file", "file", file, "reason", reason)
	} else {
		l.logger.Warn("skipping file", "file", file, "reason", reason)
	}
	l.in.Skipped = append(l.in.Skipped, Skip{File: file, Reason: reason})
}

// stdin reads standard input, giving up when the context ends (the read itself cannot be
// interrupted, so it is left to finish in the background).
func (l *loader) stdin(r io.Reader) error {
	if r == nil {
		return errors.New("reading stdin: no standard input")
	}
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := readLimited(r)
		ch <- result{data, err}
	}()
	select {
	case <-l.ctx.Done():
		return l.ctx.Err()
	case res := <-ch:
		if res.err != nil {
			return fmt.Errorf("reading stdin: %w", res.err)
		}
		return l.add(Stdin, res.data)
	}
}

// path checks a file or walks a directory named on the command line.
func (l *loader) path(p string) error {
	name := filepath.ToSlash(p)
	st, err := os.Stat(p)
	if err != nil {
		return &safeio.Error{Path: p, Err: unwrapPathError(err)}
	}
	if g := l.excluded(name); g != "" {
		if st.IsDir() {
			return l.skipTree(p, g)
		}
		l.skip(name, "excluded by "+g)
		return nil
	}
	if !st.IsDir() {
		data, err := safeio.ReadFile(p, MaxFileSize)
		if err != nil {
			return err
		}
		return l.add(name, data)
	}
	var files, charts []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := l.ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() && isChart(path) && (path == p || l.excluded(filepath.ToSlash(path)) == "") {
			// A Helm chart is checked as helm renders it, templates and subcharts included.
			charts = append(charts, path)
			return filepath.SkipDir
		}
		if d.IsDir() {
			if path == p {
				return nil
			}
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if g := l.excluded(filepath.ToSlash(path)); g != "" {
				if err := l.skipTree(path, g); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return nil
		}
		if candidate(d.Name()) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		if ctxErr := l.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("walking %q: %w", p, err)
	}
	for _, dir := range charts {
		imgs, err := chartImages(l.ctx, dir, l.helm)
		if err != nil {
			return err
		}
		l.in.Files[filepath.ToSlash(filepath.Join(dir, "Chart.yaml"))] = KindHelm
		l.in.Images = append(l.in.Images, imgs...)
	}
	sort.Strings(files)
	for _, f := range files {
		name := filepath.ToSlash(f)
		if g := l.excluded(name); g != "" {
			l.skip(name, "excluded by "+g)
			continue
		}
		data, err := safeio.ReadFile(f, MaxFileSize)
		var se *safeio.Error
		if errors.As(err, &se) && (errors.Is(err, safeio.ErrNotRegular) || errors.Is(err, safeio.ErrTooLarge)) {
			l.skip(name, fmt.Sprintf("%v (%s)", se.Err, se.Info))
			continue
		}
		if err != nil {
			return err
		}
		if err := l.add(name, data); err != nil {
			if ctxErr := l.ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			l.skip(name, "not parseable: "+err.Error())
		}
	}
	return nil
}

// skipTree counts every candidate file under an excluded directory as skipped.
func (l *loader) skipTree(dir, glob string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && candidate(d.Name()) {
			files = append(files, filepath.ToSlash(path))
		}
		return l.ctx.Err()
	})
	if err != nil {
		if ctxErr := l.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("walking %q: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		l.in.Skipped = append(l.in.Skipped, Skip{File: f, Reason: "excluded by " + glob})
	}
	l.logger.Info("skipping excluded directory", "dir", filepath.ToSlash(dir), "glob", glob, "files", len(files))
	return nil
}

// excluded returns the first exclude glob matching the path, or "".
func (l *loader) excluded(name string) string {
	for _, g := range l.exclude {
		if pathMatch(g, name) {
			return g
		}
	}
	return ""
}

// candidate reports whether a file met in a directory may hold deploy configuration:
// *.yaml, *.yml, *.json, and Dockerfile, Dockerfile.prod, prod.Dockerfile and the same for
// Containerfile, but not source files named after them (dockerfile.go, dockerfile_test.go).
func candidate(base string) bool {
	l := strings.ToLower(base)
	switch filepath.Ext(l) {
	case ".yaml", ".yml", ".json":
		return true
	case ".go", ".md", ".txt", ".py", ".js", ".ts", ".rb", ".rs", ".java", ".sh", ".orig", ".bak", ".swp":
		return false
	}
	for _, name := range []string{"dockerfile", "containerfile"} {
		if l == name || strings.HasSuffix(l, "."+name) {
			return true
		}
		if rest, ok := strings.CutPrefix(l, name); ok && rest != "" && strings.ContainsRune(".-_", rune(rest[0])) {
			return true
		}
	}
	return false
}

func (l *loader) add(name string, data []byte) error {
	kind, imgs, err := Extract(l.ctx, name, data)
	if err != nil {
		return err
	}
	if kind != "" {
		l.in.Files[name] = kind
	}
	l.in.Images = append(l.in.Images, imgs...)
	if kind == KindKubernetes || kind == "" {
		if k := readKustomization(name, data); k != nil {
			l.kustomizations = append(l.kustomizations, k)
		}
	}
	return nil
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB", MaxFileSize>>20)
	}
	return data, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
