// Package depcheck guards the direction of polygraph's imports from tests: which of
// polygraph's packages a package may depend on, which packages it must never reach, and the
// layering of the whole module (see Layer and CheckGraph).
package depcheck

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Module is polygraph's module path.
const Module = "github.com/polygraph-dev/polygraph"

// Check fails t when the package pkg (a directory such as "." or "./regtest", or an import
// path) depends, directly or through other packages, on a polygraph package that is neither
// itself nor listed in allowed. allowed names packages relative to the module ("model",
// "registry/regtest"). Test files are not considered: a test may import what it needs.
func Check(t testing.TB, pkg string, allowed ...string) {
	t.Helper()
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[Module+"/"+a] = true
	}
	self := importPath(t, pkg)
	for _, dep := range Deps(t, pkg) {
		if dep == self || !strings.HasPrefix(dep, Module+"/") || ok[dep] {
			continue
		}
		t.Errorf("%s depends on %s; it may depend only on %s", rel(self), rel(dep), strings.Join(allowed, ", "))
	}
}

// Forbid fails t when the package pkg depends, directly or not, on any of the packages
// forbidden or on a package under one of them ("net" forbids net, net/http, net/url...).
func Forbid(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	for _, dep := range Deps(t, pkg) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("%s depends on %s, which it must not (forbidden: %s)", rel(importPath(t, pkg)), dep, strings.Join(forbidden, ", "))
			}
		}
	}
}

// Deps lists every package pkg depends on, standard library included, as go list -deps does.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	return strings.Fields(goList(t, "-deps", "-f", "{{.ImportPath}}", pkg))
}

func importPath(t testing.TB, pkg string) string {
	t.Helper()
	return strings.TrimSpace(goList(t, "-f", "{{.ImportPath}}", pkg))
}

func goList(t testing.TB, args ...string) string {
	t.Helper()
	statSources(t)
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go list %s: %s", strings.Join(args, " "), msg)
	}
	return string(out)
}

func rel(p string) string { return strings.TrimPrefix(p, Module+"/") }

// statSources stats every Go file of the module. go test caches a passing result until a file
// the test read changes, and it cannot see what the go list child reads: the stats make any
// edit to an import anywhere in the module run the guard again.
func statSources(t testing.TB) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") && p != root:
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(p, ".go"):
			os.Stat(p)
		}
		return nil
	})
}
