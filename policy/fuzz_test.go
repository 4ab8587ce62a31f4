package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// addCorpusSeeds adds the files of a corpus directory as fuzz seeds.
func addCorpusSeeds(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata/corpus", dir, "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

func FuzzDockerfile(f *testing.F) {
	addCorpusSeeds(f, "dockerfile")
	for _, s := range []string{
		"FROM a\n", "ARG X=${Y:-${Z}}\nFROM $X\n", "FROM \\\n", "RUN <<EOF\n", "RUN <<-\n", "# escape=`\nFROM a `\n b\n",
		"FROM --platform=x\n", "COPY --from=\n", "FROM a AS\n", "ARG =\nFROM ${\n", "FROM ${A:+${B:-c}}\n",
		"ARG A=xxxxxxxx\nARG B=$A$A$A$A$A$A$A$A\nARG C=$B$B$B$B$B$B$B$B\nARG D=$C$C$C$C$C$C$C$C\nARG E=$D$D$D$D$D$D$D$D\nARG F=$E$E$E$E$E$E$E$E\nARG G=$F$F$F$F$F$F$F$F\nFROM a:$G\nFROM b\n",
		"ARG X=" + strings.Repeat("${Y:-", 50) + "z" + strings.Repeat("}", 50) + "\nFROM $X\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imgs, err := dockerfileImages(context.Background(), "Dockerfile", data)
		if err != nil {
			// BuildKit's parser refuses the file (an unterminated heredoc, a line over 64 KiB):
			// it cannot be built, and the error names it.
			if !strings.HasPrefix(err.Error(), `parsing "Dockerfile": `) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
		for _, im := range imgs {
			if im.Line < 1 || im.Line > len(lines) || im.Column < 1 {
				t.Fatalf("image %+v outside the input", im)
			}
			line := []rune(lines[im.Line-1])
			if im.Column > len(line) {
				t.Fatalf("image %+v: column past the end of %q", im, lines[im.Line-1])
			}
			if first, _ := utf8.DecodeRuneInString(im.Raw); utf8.ValidString(lines[im.Line-1]) && line[im.Column-1] != first {
				t.Fatalf("image %+v: position shows %q", im, string(line[im.Column-1:]))
			}
			if (im.Ref == "") == (im.Unresolved == "" && im.Unreadable == "") {
				t.Fatalf("image %+v must be either resolved or unresolved", im)
			}
		}
	})
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"nginx", "nginx:1.25", "registry:5000/repo", "registry:5000/repo:tag", "repo@" + testDigest, "repo:tag@" + testDigest,
		"localhost/a/b/c:d", "UPPER:case", "a:b:c", "a@b@c", "[::1]:5000/a:b", "a:", ":a", "@", "docker.io/library/x:latest",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if r.Pinned() == (r.Digest == "") || r.Latest() && r.Pinned() {
			t.Fatalf("%q: inconsistent %+v", s, r)
		}
		if r.Tag != "" && !strings.Contains(s, ":"+r.Tag) {
			t.Fatalf("%q: tag %q is not written in the reference", s, r.Tag)
		}
		if r.Digest != "" && !strings.HasSuffix(s, "@"+r.Digest) {
			t.Fatalf("%q: digest %q is not written in the reference", s, r.Digest)
		}
		if len(r.Names()) < 2 {
			t.Fatalf("%q: names %v", s, r.Names())
		}
		if r.Pinned() {
			again, err := ParseRef(r.WithDigest(r.Digest))
			if err != nil || again.Digest != r.Digest || again.Tag != r.Tag {
				t.Fatalf("%q: WithDigest does not round-trip: %+v, %v", s, again, err)
			}
		}
	})
}

func FuzzExtract(f *testing.F) {
	for _, d := range []string{"kubernetes", "compose", "ecs", "cloudformation", "workflows", "other"} {
		addCorpusSeeds(f, d)
	}
	f.Add([]byte("{\"containerDefinitions\":[{\"image\":\"a\"}]}"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: &d [*c, *c, *c, *c]\nservices: {w: {image: *d}}\n"))
	f.Add([]byte("x0: &b0 {image: nginx}\nx1: &b1 {<<: *b0}\nx2: &b2 {<<: [*b1, *b0]}\nservices:\n  <<: {z: {<<: *b2}}\n  w: {<<: *b2}\n"))
	f.Add([]byte("kind: List\napiVersion: v1\nitems: &i\n- kind: List\n  apiVersion: v1\n  items: *i\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, imgs, err := Extract(context.Background(), "f", data)
		if err != nil {
			return
		}
		for _, im := range imgs {
			if im.Line < 1 || im.Column < 1 {
				t.Fatalf("image %+v has no position", im)
			}
		}
	})
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${A:-${B:-c}}", "$$", "${", "${A", "$A$B", "${A:?}", "${:-x}", "${A+${B+${C}}}",
		strings.Repeat("${X:-", 40) + "y" + strings.Repeat("}", 40), strings.Repeat("$B", 64), strings.Repeat("${", 1000)} {
		f.Add(s)
	}
	big := strings.Repeat("b", 64<<10)
	f.Fuzz(func(t *testing.T, s string) {
		out, missing := expand(s, map[string]string{"A": "a"}, "$$")
		if len(missing) == 0 && len(out) > len(s)+len("a")*strings.Count(s, "A") {
			t.Fatalf("expand(%q) = %q grew beyond its substitutions", s, out)
		}
		// Under the limits, whatever the input: the output stays within the budget, and a
		// limit hit is an error, never a partial value.
		e := newExpander(context.Background(), map[string]string{"A": "a", "B": big}, "$$", len(s))
		out, _, err := e.expand(s)
		if err == nil && len(out) > MaxExpandBytes+len(s) {
			t.Fatalf("expansion of %q produced %d bytes, over the budget", s, len(out))
		}
		if err != nil && out != "" {
			t.Fatalf("expansion of %q failed (%v) but returned %d bytes", s, err, len(out))
		}
	})
}
