package config

import (
	"fmt"
	"strings"
)

// manifestFiles validates release.manifest_file: absolute paths, one per manifest the
// instances serve (probe.manifest.paths, else the one probe.manifest.path).
func (v *validator) manifestFiles() {
	c := v.cfg
	files := c.Release.ManifestFiles
	for i, f := range files {
		switch {
		case strings.HasPrefix(f, "/"):
		case len(files) == 1:
			v.fail("release.manifest_file", "release.manifest_file must be an absolute path inside the image, got %q", f)
		default:
			v.fail(fmt.Sprintf("release.manifest_file.%d", i), "release.manifest_file entry %d must be an absolute path inside the image, got %q", i+1, f)
		}
	}
	paths := len(c.Probe.Manifest.Paths)
	switch {
	case len(files) == 0:
	case paths == 0 && len(files) > 1:
		v.fail("release.manifest_file", "release.manifest_file lists %d files, and the instances serve one manifest (probe.manifest.path): list the URL paths they serve them at under probe.manifest.paths, in the same order", len(files))
	case paths > 0 && len(files) != paths:
		v.fail("release.manifest_file", "release.manifest_file lists %d %s and probe.manifest.paths %d paths: give one file per path, in the same order (or leave release.manifest_file out, and each path is judged by the fleet's consensus)",
			len(files), plural(len(files), "file", "files"), paths)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
