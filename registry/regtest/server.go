package regtest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Server is an in-process OCI registry (go-containerregistry's pkg/registry) served on
// 127.0.0.1.
type Server struct {
	// Host is the registry's host:port, to prefix references with: Host + "/app:v1".
	Host string
	// URL is the registry's base URL, http://Host.
	URL string
	srv *httptest.Server
}

// ServerOption configures a Server.
type ServerOption func(*serverOptions)

type serverOptions struct {
	blobDir string
	wrap    func(http.Handler) http.Handler
}

// WithBlobDir keeps blobs in files under dir instead of in memory, for large images. The
// default is memory.
func WithBlobDir(dir string) ServerOption { return func(o *serverOptions) { o.blobDir = dir } }

// WithMiddleware wraps the registry's handler, to misbehave on purpose (answer HEAD with 405,
// drop headers, count requests). The default is no wrapping.
func WithMiddleware(wrap func(http.Handler) http.Handler) ServerOption {
	return func(o *serverOptions) { o.wrap = wrap }
}

// NewServer starts a registry on a free port of 127.0.0.1. Close it when done.
func NewServer(opts ...ServerOption) *Server {
	var o serverOptions
	for _, opt := range opts {
		opt(&o)
	}
	ropts := []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
	if o.blobDir != "" {
		ropts = append(ropts, registry.WithBlobHandler(registry.NewDiskBlobHandler(o.blobDir)))
	}
	var h http.Handler = registry.New(ropts...)
	if o.wrap != nil {
		h = o.wrap(h)
	}
	srv := httptest.NewServer(h) // httptest listens on 127.0.0.1
	host := srv.Listener.Addr().String()
	return &Server{Host: host, URL: "http://" + host, srv: srv}
}

// Ref returns the reference of repoAndTag ("app:v1", "app@sha256:...") on this registry.
func (s *Server) Ref(repoAndTag string) string { return s.Host + "/" + repoAndTag }

// Close stops the registry.
func (s *Server) Close() { s.srv.Close() }
