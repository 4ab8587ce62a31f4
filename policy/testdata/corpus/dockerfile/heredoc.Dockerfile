# syntax=docker/dockerfile:1.7
# A BuildKit Dockerfile with heredocs and quoted flag values.
ARG GO_VERSION=1.23
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount="type=bind,from=ghcr.io/acme/protos:v3,source=/protos,target=/protos" \
    go build -o /out/app ./cmd/app
COPY <<EOF /etc/app.conf
FROM docker.io/library/ubuntu:latest
listen = :8080
EOF
RUN <<-SCRIPT
	set -e
	FROM nothing
	SCRIPT

FROM gcr.io/distroless/static-debian12@sha256:8dd8d3ca2cf283383304fd45a5c9c74d5f2cd9da8d3b077d720e264880077c65
COPY --from="build" /out/app /app
COPY --from='docker.io/tonistiigi/xx:1.5.0' /usr/bin/xx-info /usr/bin/
ENTRYPOINT ["/app"]
