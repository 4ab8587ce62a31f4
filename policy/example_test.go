package policy_test

import (
	"context"
	"os"

	"github.com/polygraph-dev/polygraph/policy"
	"github.com/polygraph-dev/polygraph/report"
)

func Example() {
	manifest := []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:v2.31.0
        - name: proxy
          image: registry:5000/envoy
        - name: pinned
          image: ghcr.io/acme/api@sha256:6e1f1b0b5b7cbd0b8f4b0a3dd2f9fbbd6b5b3f0c7f36ad44cfba4a911b0e4a3b
`)
	kind, images, err := policy.Extract(context.Background(), "k8s/web.yaml", manifest)
	if err != nil {
		panic(err)
	}
	in := &policy.Inputs{Files: map[string]policy.Kind{"k8s/web.yaml": kind}, Images: images}
	rep, err := policy.Check(context.Background(), in, policy.WithAllowedRegistries([]string{"ghcr.io"}))
	if err != nil {
		panic(err)
	}
	report.RenderPolicy(os.Stdout, rep, "github", report.Options{})
	// Output:
	// ::error file=k8s/web.yaml,line=9,col=18,endColumn=42,title=polygraph mutable-tag::"ghcr.io/acme/web:v2.31.0" in Deployment/web container web uses the mutable tag "v2.31.0" without a digest; pin it by digest
	// ::error file=k8s/web.yaml,line=11,col=18,endColumn=37,title=polygraph disallowed-registry::"registry:5000/envoy" in Deployment/web container proxy comes from registry "registry:5000", which policy.allowed_registries does not list (ghcr.io)
	// ::error file=k8s/web.yaml,line=11,col=18,endColumn=37,title=polygraph latest-tag::"registry:5000/envoy" in Deployment/web container proxy has no tag or digest, which means :latest; pin it by digest
}
