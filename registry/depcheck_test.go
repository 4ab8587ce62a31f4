package registry_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImports keeps registry a library below the CLI: of polygraph's packages it may import only
// the leaves model and manifest, and the AWS configuration loader (never the HTTP prober, verify or the CLI).
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/polygraph-dev/polygraph/model":    true,
		"github.com/polygraph-dev/polygraph/manifest": true,
		"github.com/polygraph-dev/polygraph/registry": true, // tests and regtest
		// The one AWS configuration loader, for the Amazon ECR keychain.
		"github.com/polygraph-dev/polygraph/internal/awsconf": true,
	}
	for _, dir := range []string{".", "regtest"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if strings.HasPrefix(p, "github.com/polygraph-dev/polygraph/") && !allowed[p] &&
					!(strings.HasSuffix(file, "_test.go") && p == "github.com/polygraph-dev/polygraph/registry/regtest") {
					t.Errorf("%s imports %s", file, p)
				}
			}
		}
	}
}
