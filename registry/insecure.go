package registry

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// WithInsecureRegistries lists the registries (host or host:port, as written in image
// references) that may be spoken to over plain HTTP when HTTPS fails. A host without a port
// matches it on every port. Loopback registries (127.0.0.0/8, ::1, localhost) may always be;
// no other host ever receives a plain-HTTP request, however the registry library would decide
// (it falls back to HTTP for RFC 1918 addresses and *.local names by itself), and whatever a
// token realm or a redirect points at. The default is loopback only.
func WithInsecureRegistries(hosts ...string) Option {
	return func(o *options) { o.insecure = append(o.insecure, hosts...) }
}

// plainHTTPAllowed reports whether host (host or host:port, from a reference or a URL) may be
// spoken to over plain HTTP. defaultPort is the port a URL without one means ("" for none).
func plainHTTPAllowed(listed []string, host, defaultPort string) bool {
	h, port := splitHostPort(host)
	if port == "" {
		port = defaultPort
	}
	if isLoopbackHost(h) {
		return true
	}
	for _, l := range listed {
		lh, lport := splitHostPort(l)
		if strings.EqualFold(lh, h) && (lport == "" || lport == port) {
			return true
		}
	}
	return false
}

// splitHostPort splits "host:port", "[v6]:port", "host" and "v6" alike.
func splitHostPort(s string) (host, port string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.Trim(s, "[]")), ""
}

// isLoopbackHost is localhost or an address in 127.0.0.0/8 or ::1. Names are not resolved:
// only the literal name localhost counts.
func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// plainHTTPGuard refuses, before anything is sent, every plain-HTTP request to a host that is
// neither loopback nor listed. It sits under the registry library, so it sees every request:
// pings, token fetches and redirects included.
type plainHTTPGuard struct {
	next   http.RoundTripper
	listed []string
}

func (g plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !plainHTTPAllowed(g.listed, req.URL.Host, "80") {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain HTTP to %s: only loopback registries and those in registry.insecure are spoken to without TLS", req.URL.Host)
	}
	return g.next.RoundTrip(req)
}
