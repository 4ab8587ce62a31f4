package running

import (
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// FuzzParseOutput feeds the SSM script's output parser what an instance could print: it must
// never panic, and whatever it reads must be canonical digests.
// Run: go test ./running -run - -fuzz FuzzParseOutput -fuzztime 30s
func FuzzParseOutput(f *testing.F) {
	f.Add("polygraph-runtime v1\nimage-ref web\nimage-id " + releaseID + "\nrepo-digest r/web@" + releaseTop + "\nend\n")
	f.Add("image-id " + strings.ToUpper(releaseID[7:]) + "\nrepo-digest @sha256:\nrepo-digest a@b@" + releaseTop + "\n")
	f.Add("error docker container inspect: Error response from daemon: No such container: web\n")
	f.Add("image-id sha256:zz\r\nend")
	f.Fuzz(func(t *testing.T, out string) {
		p := parseOutput(out)
		if p.imageID != "" {
			if d, ok := model.CanonicalDigest(p.imageID); !ok || d != p.imageID {
				t.Fatalf("image ID %q is not canonical", p.imageID)
			}
		}
		for _, rd := range p.repoDigests {
			i := strings.LastIndex(rd, "@")
			if i <= 0 {
				t.Fatalf("repo digest %q has no repository", rd)
			}
			if d, ok := model.CanonicalDigest(rd[i+1:]); !ok || d != rd[i+1:] {
				t.Fatalf("repo digest %q is not canonical", rd)
			}
		}
		r := fromOutput("test", "Success", 0, out)
		if r.Unknown == "" && r.ImageID == "" && len(r.RepoDigests) == 0 {
			t.Fatalf("neither known nor unknown: %+v", r)
		}
	})
}
