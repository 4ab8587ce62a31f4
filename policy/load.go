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
	// Skipped lists files met while walking a directory that could not be parsed.
	Skipped []string
}

// Load reads every path (a file, a directory walked recursively, or "-" for stdin) and extracts
// the image references of the files it recognises by content. A file named explicitly that
// does not parse is an error; a file met in a directory that does not parse (a Helm template,
// say) is skipped and logged. A nil logger discards logs.
func Load(ctx context.Context, paths []string, stdin io.Reader, logger *slog.Logger) (*Inputs, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	in := &Inputs{Files: map[string]Kind{}}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p == "-" {
			if stdin == nil {
				return nil, errors.New("reading stdin: no standard input")
			}
			data, err := readLimited(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			if err := in.add(Stdin, data); err != nil {
				return nil, err
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading %q: %w", p, err)
		}
		if !st.IsDir() {
			if err := in.addFile(p); err != nil {
				return nil, err
			}
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (d.Name() == ".git" || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && candidate(d.Name()) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walking %q: %w", p, err)
		}
		sort.Strings(files)
		for _, f := range files {
			if err := in.addFile(f); err != nil {
				logger.Warn("skipping unparseable file", "file", f, "err", err)
				in.Skipped = append(in.Skipped, filepath.ToSlash(f))
			}
		}
	}
	return in, nil
}

// candidate reports whether a file met in a directory may hold deploy configuration.
func candidate(base string) bool {
	l := strings.ToLower(base)
	switch filepath.Ext(l) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return strings.HasPrefix(l, "dockerfile") || strings.HasPrefix(l, "containerfile") ||
		strings.HasSuffix(l, ".dockerfile") || strings.HasSuffix(l, ".containerfile")
}

func (in *Inputs) addFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	defer f.Close()
	data, err := readLimited(f)
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	return in.add(filepath.ToSlash(path), data)
}

func (in *Inputs) add(name string, data []byte) error {
	kind, imgs, err := Extract(name, data)
	if err != nil {
		return err
	}
	if kind != "" {
		in.Files[name] = kind
	}
	in.Images = append(in.Images, imgs...)
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
