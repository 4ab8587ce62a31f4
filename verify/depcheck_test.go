package verify

import (
	"go/build"
	"strings"
	"testing"
)

// The judge must stay pure: no network, no process, no file access, no other polygraph
// package but the model.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"encoding/json": true, "encoding/xml": true, "fmt": true, "io": true, "sort": true, "strings": true, "time": true,
		"github.com/polygraph-dev/polygraph/model": true,
	}
	for _, imp := range pkg.Imports {
		if !allowed[imp] {
			t.Errorf("verify imports %q; the judge may import only %v", imp, keys(allowed))
		}
		if strings.HasPrefix(imp, "net") || imp == "os" || imp == "os/exec" {
			t.Errorf("verify must not do I/O, but imports %q", imp)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
