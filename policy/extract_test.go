package policy

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// brief renders images as "LINE:COL REF" (or "LINE:COL ?RAW" when unresolved) for comparison.
func brief(imgs []Image) []string {
	var out []string
	for _, im := range imgs {
		if im.Unresolved != "" {
			out = append(out, fmt.Sprintf("%d:%d ?%s", im.Line, im.Column, im.Raw))
		} else {
			out = append(out, fmt.Sprintf("%d:%d %s", im.Line, im.Column, im.Ref))
		}
	}
	return out
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantKind Kind
		want     []string
	}{
		{"kubernetes pod", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: i, image: "busybox:1.36"}]
  containers:
  - name: a
    image: nginx
  ephemeralContainers:
  - name: dbg
    image: 'netshoot:v1'
`, KindKubernetes, []string{"6:38 busybox:1.36", "9:12 nginx", "12:13 netshoot:v1"}},
		{"kubernetes cronjob", `apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - {name: a, image: app:v1}
`, KindKubernetes, []string{"10:30 app:v1"}},
		{"kubernetes cronjob init containers", `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers: [{name: i, image: "init:v1"}]
          containers: [{name: a, image: app:v1}]
`, KindKubernetes, []string{"9:46 init:v1", "10:41 app:v1"}},
		{"kubernetes job of another API group", `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  tasks:
  - name: ps
    template:
      spec:
        containers: [{name: a, image: "tf:2"}]
  - name: worker
    template:
      spec:
        initContainers: [{name: i, image: "init:1"}]
        containers: [{name: a, image: tf}]
`, KindKubernetes, []string{"9:40 tf:2", "13:44 init:1", "14:39 tf"}},
		{"kubernetes deployment of another API group", `apiVersion: apps.example.com/v1
kind: Deployment
metadata: {name: d}
spec:
  components:
    web:
      containers: [{name: a, image: "web:1"}]
`, KindKubernetes, []string{"7:38 web:1"}},
		{"kubernetes service has no images", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n", KindKubernetes, nil},
		{"multi-document", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{image: a:1}]\n---\napiVersion: v1\nkind: Pod\nspec:\n  containers: [{image: b:1}]\n",
			KindKubernetes, []string{"4:24 a:1", "9:24 b:1"}},
		{"compose interpolation", `services:
  web:
    image: ${REG:-ghcr.io}/a/web:${TAG:-latest}
  api:
    image: a/api:${API}
  built:
    build: .
    image: a/built:dev
  local:
    build: .
    image: a/local:dev
    pull_policy: build
  placeholder: ~
`, KindCompose, []string{"3:12 ghcr.io/a/web:latest", "5:12 ?a/api:${API}", "8:12 a/built:dev"}},
		{"YAML null is no image", `apiVersion: v1
kind: Pod
spec:
  initContainers: [~]
  containers:
  - {name: a, image: null}
  - {name: b, image: ~}
  - {name: c, image: "null"}
`, KindKubernetes, []string{"8:23 null"}},
		{"workflow services expression", "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    services: ${{ fromJSON(inputs.services) }}\n    steps: [{run: make}]\n",
			KindWorkflow, []string{"5:15 ?${{ fromJSON(inputs.services) }}"}},
		{"workflow container null", `on: push
jobs:
  build:
    runs-on: ubuntu-latest
    container: null
    services:
      db: ~
    steps: [{run: make}]
`, KindWorkflow, nil},
		{"compose merge key", "x-base: &base\n  image: redis:7\nservices:\n  cache:\n    <<: *base\n", KindCompose, []string{"2:10 redis:7"}},
		{"ecs register input", `{"family": "f", "containerDefinitions": [{"name": "a", "image": "httpd:2.4"}]}`, KindECS, []string{"1:66 httpd:2.4"}},
		{"ecs describe output with tabs", "{\n\t\"taskDefinition\": {\n\t\t\"containerDefinitions\": [{\"image\": \"x:1\"}]\n\t}\n}\n", KindECS, []string{"3:39 x:1"}},
		{"cloudformation", `Resources:
  T:
    Type: AWS::ECS::TaskDefinition
    Properties:
      ContainerDefinitions:
        - Image: !Sub "${AWS::AccountId}.dkr.ecr.us-east-1.amazonaws.com/a:1"
        - Image: {"Fn::GetAtt": [Repo, RepositoryUri]}
        - Image: nginx:1.25
  Other:
    Type: AWS::S3::Bucket
`, KindCloudFormation, []string{"6:18 ?!Sub ${AWS::AccountId}.dkr.ecr.us-east-1.amazonaws.com/a:1", "7:18 ?Fn::GetAtt", "8:18 nginx:1.25"}},
		{"workflow", `on: push
jobs:
  a:
    runs-on: ubuntu-latest
    container: node:20
    services:
      db: {image: postgres:16}
    steps:
      - uses: docker://alpine:3.20
      - uses: actions/checkout@v4
  b:
    container:
      image: ${{ matrix.img }}
`, KindWorkflow, []string{"5:16 node:20", "7:19 postgres:16", "9:24 alpine:3.20", "13:14 ?${{ matrix.img }}"}},
		{"dockerfile", "# syntax=docker/dockerfile:1\nARG V=1.22\nFROM golang:${V} AS build\nFROM build\nFROM scratch\n", KindDockerfile, []string{"3:6 golang:1.22"}},
		{"kubernetes placeholders are unresolved", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: ${IMAGE}\n  - image: \"{{ .Values.image }}\"\n",
			KindKubernetes, []string{"5:12 ?${IMAGE}", "6:13 ?{{ .Values.image }}"}},
		{"gitlab ci", "image: node:20\nvariables: {V: \"3.1\"}\ntest:\n  image: {name: \"ruby:$V\"}\n  services: [~, {name: $REG/db}]\n  script: [npm test]\n", KindGitLabCI,
			[]string{"1:8 node:20", "4:18 ruby:3.1", "5:24 ?$REG/db"}},
		{"helm values are not gitlab ci", "replicaCount: 1\nimage:\n  repository: nginx\n  tag: \"\"\n", "", nil},
		{"plain text", "hello", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, imgs, err := Extract(context.Background(), "f", []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if kind != tt.wantKind {
				t.Errorf("kind = %q, want %q", kind, tt.wantKind)
			}
			if got := brief(imgs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("images =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestExtractInvalidYAML(t *testing.T) {
	if _, _, err := Extract(context.Background(), "bad.yaml", []byte("a: [\n")); err == nil || !strings.Contains(err.Error(), `parsing "bad.yaml"`) {
		t.Errorf("err = %v, want a parsing error naming the file", err)
	}
}

func TestDockerfile(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"platform flag and alias", "FROM --platform=$BUILDPLATFORM golang:1.22 AS build\nFROM build AS test\nFROM Build\n", []string{"1:32 golang:1.22"}},
		{"scratch", "FROM scratch\nFROM SCRATCH\n", nil},
		{"arg default", "ARG BASE=alpine\nARG TAG=3.20\nFROM ${BASE}:$TAG\n", []string{"3:6 alpine:3.20"}},
		{"arg referencing arg", "ARG REG=ghcr.io\nARG IMG=${REG}/a/b:1\nFROM $IMG\n", []string{"3:6 ghcr.io/a/b:1"}},
		{"arg without default", "ARG BASE\nFROM ${BASE}\n", []string{"2:6 ?${BASE}"}},
		{"arg without default but fallback", "ARG BASE\nFROM ${BASE:-debian:12}\n", []string{"2:6 debian:12"}},
		{"stage arg does not reach FROM", "FROM a:1\nARG X=b:1\nFROM $X\n", []string{"1:6 a:1", "3:6 ?$X"}},
		{"continuation", "FROM \\\n  --platform=linux/arm64 \\\n  alpine:3.20 \\\n  AS base\n", []string{"3:3 alpine:3.20"}},
		{"comment inside continuation", "FROM --platform=linux/arm64 \\\n# a comment\n  alpine:3.20\n", []string{"3:3 alpine:3.20"}},
		{"heredoc body is not parsed", "FROM a:1\nRUN <<EOF\nFROM ubuntu\nEOF\nFROM b:1\n", []string{"1:6 a:1", "5:6 b:1"}},
		{"heredoc with dash and quotes", "FROM a:1\nCOPY <<-\"EOT\" /x\n\tFROM ubuntu\n\tEOT\nFROM b:1\n", []string{"1:6 a:1", "5:6 b:1"}},
		{"copy from image", "FROM a:1 AS s\nCOPY --from=s /x /x\nCOPY --from=0 /y /y\nCOPY --chown=1 --from=nginx:1.25 /z /z\n", []string{"1:6 a:1", "4:23 nginx:1.25"}},
		{"run mount from image", "FROM a:1 AS s\nRUN --mount=type=bind,from=nginx:1.25,target=/x --mount=type=cache,target=/c make\nRUN --mount=from=s,target=/y true\n", []string{"1:6 a:1", "2:28 nginx:1.25"}},
		{"copy from a stage defined later", "FROM a:1 AS one\nCOPY --from=two /x /x\nFROM b:1 AS two\n", []string{"1:6 a:1", "3:6 b:1"}},
		{"undeclared variable expands to empty", "FROM alpine$TAG\n", []string{"1:6 alpine"}},
		{"platform args stay unresolved", "FROM --platform=$BUILDPLATFORM golang:1.22\nFROM base-$TARGETARCH\n", []string{"1:32 golang:1.22", "2:6 ?base-$TARGETARCH"}},
		{"lower-case instructions", "from a:1 as s\nfrom s\n", []string{"1:6 a:1"}},
		{"escape directive", "# escape=`\nFROM `\n  mcr.microsoft.com/windows/servercore:ltsc2022\n", []string{"3:3 mcr.microsoft.com/windows/servercore:ltsc2022"}},
		{"crlf", "ARG V=1\r\nFROM a:$V\r\n", []string{"2:6 a:1"}},
		{"quoted flag values", "FROM a:1\nCOPY --from=\"nginx:1.25\" /a /b\nRUN --mount=\"type=bind,from=alpine:3.20,target=/x\" true\n", []string{"1:6 a:1", "2:14 nginx:1.25", "3:29 alpine:3.20"}},
		{"two heredocs on one instruction", "FROM a:1\nRUN <<A <<B\nFROM x\nA\nFROM y\nB\nFROM b:1\n", []string{"1:6 a:1", "7:6 b:1"}},
		{"flag on a continuation line", "FROM a:1\nCOPY --chown=1 \\\n  --from=nginx:1.25 /z /z\n", []string{"1:6 a:1", "3:10 nginx:1.25"}},
		{"word split by a continuation", "FROM alpi\\\nne:3\n", []string{"1:6 alpine:3"}},
		{"flag value not in ASCII", "FROM a:1\nCOPY --from=registry.example/\u00e9t\u00e9:1 /a /b\n", []string{"1:6 a:1", "2:13 registry.example/\u00e9t\u00e9:1"}},
		{"form feed separates words", "FROM\fa:1\n", []string{"1:6 a:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !isDockerfile([]byte(tt.data)) {
				t.Fatalf("not recognised as a Dockerfile")
			}
			imgs, err := dockerfileImages(context.Background(), "Dockerfile", []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if got := brief(imgs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("images =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDockerfileRefused checks that a Dockerfile BuildKit refuses to parse is an error naming
// the file (skipped and counted in a walk, exit 3 when named), never a file without images.
func TestDockerfileRefused(t *testing.T) {
	for name, data := range map[string]string{
		"unterminated heredoc": "FROM a:1\nRUN <<EOF\necho\n",
		"line over 64 KiB":     "FROM a:1\nRUN echo " + strings.Repeat("x", 70<<10) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			imgs, err := dockerfileImages(context.Background(), "Dockerfile", []byte(data))
			if err == nil || !strings.HasPrefix(err.Error(), `parsing "Dockerfile": `) {
				t.Fatalf("images %v, error %v; want an error naming the file", brief(imgs), err)
			}
		})
	}
}

func TestExtractSelfReferencingList(t *testing.T) {
	data, err := os.ReadFile("testdata/selflist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, imgs, err := Extract(context.Background(), "selflist.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) == 0 || len(imgs) > 8 {
		t.Errorf("%d images from a List that contains itself, want a few", len(imgs))
	}
}
