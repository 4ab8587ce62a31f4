package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Registry configures access to OCI registries.
type Registry struct {
	// Insecure lists registries (host or host:port, as written in image references) that may be
	// spoken to over plain HTTP when HTTPS fails. Loopback registries (127.0.0.0/8, ::1,
	// localhost) always may; no other host ever is.
	Insecure []string `yaml:"insecure"`
}

// registry checks registry.insecure: each entry a bare host or host:port.
func (v *validator) registry() {
	for i, h := range v.cfg.Registry.Insecure {
		path := fmt.Sprintf("registry.insecure.%d", i)
		if h == "" || strings.Contains(h, "://") || strings.ContainsAny(h, "/@?# \t") {
			v.fail(path, "registry.insecure entry %q must be a host or host:port (no scheme, path or credentials)", h)
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: a name or an address (a bare IPv6 address has colons of its own).
			if strings.Contains(h, ":") && net.ParseIP(strings.Trim(h, "[]")) == nil {
				v.fail(path, "registry.insecure entry %q must be a host or host:port", h)
			}
			continue
		}
		if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
			v.fail(path, "registry.insecure entry %q must be a host or host:port with a port from 1 to 65535", h)
		}
	}
}
