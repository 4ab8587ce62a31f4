package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
)

func date(s string) config.Date {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return config.Date{Time: t}
}

func TestCheckRules(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	ex := []config.Exception{
		{Image: "docker.io/library/busybox:*", Reason: "fixture", Expires: date("2027-01-01"), Line: 4},
		{Image: "redis:*", Reason: "old", Expires: date("2026-11-28"), Line: 7},
		{Image: "memcached:*", Reason: "last day", Expires: date("2026-11-29"), Line: 9},
		{Image: "ghcr.io/acme/*", Reason: "no expiry", Line: 11},
	}
	tests := []struct {
		name  string
		image string
		opts  []Option
		want  []string // rule:severity
	}{
		{"pinned by digest", "nginx@" + testDigest, nil, nil},
		{"tag and digest", "nginx:1.25@" + testDigest, nil, nil},
		{"mutable tag", "nginx:1.25", nil, []string{"mutable-tag:error"}},
		{"mutable tag is a warning without require_digest", "nginx:1.25", []Option{WithRequireDigest(false)}, []string{"mutable-tag:warning"}},
		{"latest stays an error without require_digest", "nginx:latest", []Option{WithRequireDigest(false)}, []string{"latest-tag:error"}},
		{"implicit latest", "nginx", nil, []string{"latest-tag:error"}},
		{"registry port is not a tag", "registry:5000/app", nil, []string{"latest-tag:error"}},
		{"invalid reference", "Nginx:1", nil, []string{"invalid-reference:error"}},
		{"allowed registry", "ghcr.io/acme/web@" + testDigest, []Option{WithAllowedRegistries([]string{"ghcr.io"})}, nil},
		{"disallowed registry", "quay.io/a/b@" + testDigest, []Option{WithAllowedRegistries([]string{"ghcr.io"})}, []string{"disallowed-registry:error"}},
		{"docker.io alias", "redis@" + testDigest, []Option{WithAllowedRegistries([]string{"index.docker.io"})}, nil},
		{"repository prefix", "ghcr.io/acmeevil/x@" + testDigest, []Option{WithAllowedRegistries([]string{"ghcr.io/acme"})}, []string{"disallowed-registry:error"}},
		{"registry wildcard", "1.dkr.ecr.eu-west-1.amazonaws.com/x@" + testDigest, []Option{WithAllowedRegistries([]string{"*.dkr.ecr.*.amazonaws.com"})}, nil},
		{"valid exception suppresses", "busybox:1.36", []Option{WithExceptions(ex, "p.yaml")}, nil},
		{"expired exception", "redis:7", []Option{WithExceptions(ex, "p.yaml")}, []string{"exception-expired:error", "mutable-tag:error"}},
		{"exception valid through its last day", "memcached:1.6", []Option{WithExceptions(ex, "p.yaml")}, nil},
		{"exception without expiry", "ghcr.io/acme/web:main", []Option{WithExceptions(ex, "p.yaml")}, nil},
		{"expired exception on a compliant image is silent", "redis@" + testDigest, []Option{WithExceptions(ex, "p.yaml")}, nil},
		{"exception covers disallowed registry", "busybox:1.36", []Option{WithExceptions(ex, "p.yaml"), WithAllowedRegistries([]string{"ghcr.io"})}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Inputs{Images: []Image{{File: "f.yaml", Line: 2, Column: 10, Raw: tt.image, Ref: tt.image, Where: "test"}}}
			r, err := Check(context.Background(), in, append([]Option{WithNow(func() time.Time { return now })}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Rule+":"+string(f.Severity))
				if f.File != "f.yaml" || f.Line != 2 || f.Column != 10 || f.Image != tt.image || f.Message == "" {
					t.Errorf("finding %+v does not point at the image", f)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("findings = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckUnresolved(t *testing.T) {
	in := &Inputs{Images: []Image{{File: "c.yml", Line: 3, Column: 12, Raw: "a:${TAG}", Where: "service a", Unresolved: "needs $TAG"}}}
	r, err := Check(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Rule != RuleUnresolvedImage || r.Findings[0].Severity != model.SeverityWarning || r.Verdict != "warn" {
		t.Fatalf("report = %+v", r)
	}
	if !r.FailsAt(model.SeverityWarning) || r.FailsAt(model.SeverityError) || r.FailsAt("") {
		t.Errorf("FailsAt wrong for a warning-only report")
	}
}

func TestExpiredExceptionMessage(t *testing.T) {
	ex := []config.Exception{{Image: "redis:*", Reason: "cache", Expires: date("2025-01-01"), Line: 7}}
	in := &Inputs{Images: []Image{{File: "f", Line: 1, Column: 1, Raw: "redis:7", Ref: "redis:7", Where: "w"}}}
	r, err := Check(context.Background(), in, WithExceptions(ex, "polygraph.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	msg := r.Findings[0].Message
	for _, want := range []string{`"redis:*"`, "polygraph.yaml:7", "cache", "2025-01-01"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestExceptionPatternForms(t *testing.T) {
	for _, tt := range []struct {
		pattern, image string
		want           bool
	}{
		{"busybox:*", "busybox:1.36", true},
		{"busybox:*", "busybox", true},
		{"docker.io/library/busybox:*", "busybox", true},
		{"index.docker.io/library/busybox:*", "docker.io/library/busybox:1", true},
		{"docker.io/library/busybox:*", "quay.io/library/busybox:1", false},
		{"ghcr.io/acme/*", "ghcr.io/acme/web@" + testDigest, true},
	} {
		r, err := ParseRef(tt.image)
		if err != nil {
			t.Fatal(err)
		}
		if got := matchesAny(tt.pattern, r.Names()); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v (names %v)", tt.pattern, tt.image, got, tt.want, r.Names())
		}
	}
}
