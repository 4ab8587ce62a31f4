# polygraph container image: a static binary on distroless, run as a non-root user.
#
#   docker build -t polygraph --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker run --rm -v "$PWD:/work" polygraph policy check .
#
# Both base images are pinned by digest (polygraph's own policy check requires it); the tag in
# front of each digest says what it is. To move to newer bases, look the digests up with
# `crane digest IMAGE:TAG` or `docker buildx imagetools inspect IMAGE:TAG` and replace both.

# Build on the builder's own platform and cross-compile: no emulation needed for arm64.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm@sha256:b305420a68d0f229d91eb3b3ed9e519fcf2cf5461da4bef997bf927e8c0bfd2b AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/polygraph ./cmd/polygraph

# distroless static: CA certificates, tzdata and /etc/passwd with the nonroot user, no shell.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /out/polygraph /usr/local/bin/polygraph
# nonroot, numerically, so runAsNonRoot admission checks can see it is not root.
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/polygraph"]
CMD ["--help"]
