package policy

import "testing"

const testDigest = "sha256:6e1f1b0b5b7cbd0b8f4b0a3dd2f9fbbd6b5b3f0c7f36ad44cfba4a911b0e4a3b"

func TestParseRef(t *testing.T) {
	tests := []struct {
		name, in                    string
		registry, repo, tag, digest string
		pinned, latest, wantErr     bool
	}{
		{name: "bare name is implicit latest", in: "nginx", registry: "docker.io", repo: "library/nginx", latest: true},
		{name: "explicit latest", in: "nginx:latest", registry: "docker.io", repo: "library/nginx", tag: "latest", latest: true},
		{name: "tag", in: "nginx:1.25", registry: "docker.io", repo: "library/nginx", tag: "1.25"},
		{name: "registry port is not a tag", in: "registry:5000/repo", registry: "registry:5000", repo: "repo", latest: true},
		{name: "registry port and tag", in: "registry.example.com:5000/team/app:v1", registry: "registry.example.com:5000", repo: "team/app", tag: "v1"},
		{name: "digest only", in: "nginx@" + testDigest, registry: "docker.io", repo: "library/nginx", digest: testDigest, pinned: true},
		{name: "tag and digest", in: "ghcr.io/acme/web:v2@" + testDigest, registry: "ghcr.io", repo: "acme/web", tag: "v2", digest: testDigest, pinned: true},
		{name: "port, tag and digest", in: "localhost:5000/web:v2@" + testDigest, registry: "localhost:5000", repo: "web", tag: "v2", digest: testDigest, pinned: true},
		{name: "docker.io is index.docker.io", in: "docker.io/library/redis:7", registry: "docker.io", repo: "library/redis", tag: "7"},
		{name: "upper case repository", in: "Acme/Web:1", wantErr: true},
		{name: "short digest", in: "nginx@sha256:abc", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "space", in: "nginx :1", wantErr: true},
		{name: "url scheme", in: "https://ghcr.io/a/b:1", wantErr: true},
		{name: "empty tag", in: "nginx:", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRef(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseRef(%q) = %+v, want an error", tt.in, r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Registry() != tt.registry || r.Repository.RepositoryStr() != tt.repo || r.Tag != tt.tag || r.Digest != tt.digest {
				t.Errorf("ParseRef(%q) = %s %s tag %q digest %q; want %s %s tag %q digest %q", tt.in,
					r.Registry(), r.Repository.RepositoryStr(), r.Tag, r.Digest, tt.registry, tt.repo, tt.tag, tt.digest)
			}
			if r.Pinned() != tt.pinned || r.Latest() != tt.latest {
				t.Errorf("Pinned, Latest = %v, %v; want %v, %v", r.Pinned(), r.Latest(), tt.pinned, tt.latest)
			}
		})
	}
}

func TestWithDigest(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nginx:1.25", "nginx:1.25@" + testDigest},
		{"nginx", "nginx@" + testDigest},
		{"ghcr.io/a/b:v1@sha256:" + "0000000000000000000000000000000000000000000000000000000000000000", "ghcr.io/a/b:v1@" + testDigest},
	} {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRef(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.WithDigest(testDigest); got != tt.want {
				t.Errorf("WithDigest = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"docker.io/library/busybox:*", "docker.io/library/busybox:1.36", true},
		{"docker.io/library/busybox:*", "docker.io/library/busybox-evil:1", false},
		{"*.dkr.ecr.*.amazonaws.com", "123.dkr.ecr.us-east-1.amazonaws.com", true},
		{"redis:?", "redis:7", true},
		{"redis:?", "redis:7.2", false},
		{"*", "", true},
		{"a*b*c", "a-x-b-y-c", true},
		{"a*b*c", "a-x-c", false},
	} {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}
