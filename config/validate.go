package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Enumerations accepted by the config.
var (
	Schemes       = []string{"http", "https"}
	Formats       = []string{"auto", "webpack", "vite", "ngsw", "sprockets", "propshaft", "mix", "nextjs", "parcel", "html", "webpack-assets"}
	DigestSources = []string{"http", "header", "ssm", "docker", "ec2-tag"}
	CompareModes  = []string{"assets", "bytes"}
	AddressKinds  = []string{"private_ip", "public_ip", "private_dns"}
	ExpectModes   = []string{"release", "fleet"}
	RuntimeKinds  = []string{"ssm", "docker"}
	Engines       = []string{"docker", "containerd", "podman", "nerdctl"}
	OnErrorModes  = []string{"abandon", "continue"}
)

func (c *Config) setDefaults() {
	if c.Release.Platform == "" {
		c.Release.Platform = DefaultPlatform
	}
	if c.Release.Version == "" && c.Release.Image != "" {
		c.Release.Version = tagOf(c.Release.Image)
	}
	if c.Release.Record != "" {
		c.Release.Record = c.Abs(c.Release.Record)
	}
	if c.Fleet.EC2 != nil && c.Fleet.EC2.Address == "" {
		c.Fleet.EC2.Address = "private_ip"
	}
	p := &c.Probe
	if p.Scheme == "" {
		p.Scheme = "http"
	}
	if p.Manifest.Path == "" && len(p.Manifest.Paths) == 0 {
		p.Manifest.Path = DefaultManifestPath
	}
	if p.Manifest.MaxAssets == 0 {
		p.Manifest.MaxAssets = DefaultMaxAssets
	}
	if p.Manifest.Format == "" {
		p.Manifest.Format = "auto"
	}
	if p.Digest.Source == "" && (p.Digest.Path != "" || p.Digest.Pointer != "") {
		p.Digest.Source = "http"
	}
	if p.Concurrency == 0 {
		p.Concurrency = DefaultConcurrency
	}
	if p.Timeout == 0 {
		p.Timeout = Duration(DefaultTimeout)
	}
	if p.Retries == nil {
		r := DefaultRetries
		p.Retries = &r
	}
	if p.RetryBudget == nil {
		b := DefaultRetryBudget
		p.RetryBudget = &b
	}
	if p.TLS.ExpiryWarning == 0 {
		p.TLS.ExpiryWarning = Duration(DefaultExpiryWarning)
	}
	if p.TLS.CAFile != "" {
		p.TLS.CAFile = c.Abs(p.TLS.CAFile)
	}
	rt := &p.Runtime.TLS
	rt.CAFile, rt.CertFile, rt.KeyFile = c.Abs(rt.CAFile), c.Abs(rt.CertFile), c.Abs(rt.KeyFile)
	if p.MaxBody == 0 {
		p.MaxBody = DefaultMaxBody
	}
	if c.CDN.Concurrency == 0 {
		c.CDN.Concurrency = DefaultCDNConcurrency
	}
	if c.CDN.CheckReplicas == nil {
		t := true
		c.CDN.CheckReplicas = &t
	}
	if c.Compare == "" {
		c.Compare = "assets"
	}
	h := &c.Hook
	if h.ReadyTimeout == 0 {
		h.ReadyTimeout = Duration(10 * 60e9)
	}
	if h.HeartbeatInterval == 0 {
		h.HeartbeatInterval = Duration(60e9)
	}
	if h.Expect == "" {
		h.Expect = "release"
	}
	if h.OnError == "" {
		h.OnError = "abandon"
	}
	if h.Concurrency == 0 {
		h.Concurrency = DefaultHookConcurrency
	}
	if h.DrainTimeout == 0 {
		h.DrainTimeout = Duration(DefaultDrainTimeout)
	}
	if c.Diagnose.SearchTags == nil {
		n := DefaultSearchTags
		c.Diagnose.SearchTags = &n
	}
	if c.Policy.RequireDigest == nil {
		t := true
		c.Policy.RequireDigest = &t
	}
}

// Abs resolves a path from the config against the config file's directory.
func (c *Config) Abs(p string) string {
	if p == "" || filepath.IsAbs(p) || p == "-" || c.Dir == "" {
		return p
	}
	return filepath.Join(c.Dir, p)
}

// tagOf returns the tag of an image reference ("" for a digest reference or none).
func tagOf(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[i+1:]
	}
	return ""
}

type validator struct {
	cfg  *Config
	root *yaml.Node
	err  error
}

// fail records the first error, at the line of the key path ("probe.scheme", "fleet.static.2").
func (v *validator) fail(path, format string, args ...any) {
	v.failAt(v.line(path), format, args...)
}

// warn records a setting that has no effect, at the line of its key path.
func (v *validator) warn(path, format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if line := v.line(path); line > 0 {
		w = fmt.Sprintf("%s:%d: %s", v.cfg.File, line, w)
	} else if v.cfg.File != "" {
		w = v.cfg.File + ": " + w
	}
	v.cfg.Warnings = append(v.cfg.Warnings, w)
}

// failAt records the first error, at a line known already.
func (v *validator) failAt(line int, format string, args ...any) {
	if v.err != nil {
		return
	}
	v.err = &Error{File: v.cfg.File, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// line finds the line of a dotted key path in the document (list items by index), falling
// back to the deepest parent found.
func (v *validator) line(path string) int {
	n := v.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					line = n.Content[i].Line
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(part); err == nil && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

func (v *validator) oneOf(path, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.fail(path, "%s must be one of %s, got %q", path, strings.Join(allowed, ", "), value)
	}
}

func (v *validator) validate() {
	c := v.cfg
	v.numbers(v.root, "")
	for _, path := range []string{"probe.timeout", "probe.tls.expiry_warning", "hook.ready_timeout", "hook.heartbeat_interval"} {
		v.positive(path)
	}
	// Defaults have replaced a 0 by now: look at what was written.
	for _, path := range []string{"probe.concurrency", "cdn.concurrency", "probe.max_body"} {
		if n, err := ParseByteSize(v.scalar(path)); err == nil && n == 0 {
			v.fail(path, "%s must be at least 1, got %s (leave it out for the default)", path, v.scalar(path))
		}
	}
	v.headers()
	v.oneOf("probe.scheme", c.Probe.Scheme, Schemes)
	v.oneOf("probe.manifest.format", c.Probe.Manifest.Format, Formats)
	v.oneOf("compare", c.Compare, CompareModes)
	v.oneOf("hook.expect", c.Hook.Expect, ExpectModes)
	v.oneOf("hook.on_error", c.Hook.OnError, OnErrorModes)
	if c.Probe.Digest.Source != "" {
		v.oneOf("probe.digest.source", c.Probe.Digest.Source, DigestSources)
	}
	if m := c.Probe.Manifest; len(m.Paths) > 0 {
		v.manifestPaths(m)
	} else if !strings.HasPrefix(m.Path, "/") {
		v.fail("probe.manifest.path", "probe.manifest.path must start with /, got %q", m.Path)
	}
	if c.Probe.Host != "" && (strings.ContainsAny(c.Probe.Host, "/ @") || hasControl(c.Probe.Host) || strings.Contains(c.Probe.Host, "://")) {
		v.fail("probe.host", "probe.host must be a host name (no scheme or path), got %q", c.Probe.Host)
	}
	v.claim("probe.version", c.Probe.Version)
	d := c.Probe.Digest
	switch d.Source {
	case "http":
		if d.Path == "" || d.Pointer == "" {
			v.fail("probe.digest", "probe.digest.source http needs path and pointer")
		}
	case "header":
		if d.Header == "" {
			v.fail("probe.digest", "probe.digest.source header needs header")
		}
	case "ssm", "docker":
		if d.Container == "" {
			v.fail("probe.digest", "probe.digest.source %s needs container", d.Source)
		}
	}
	v.runtime()
	if d.Pointer != "" && !strings.HasPrefix(d.Pointer, "/") {
		v.fail("probe.digest.pointer", "probe.digest.pointer must be a JSON pointer starting with /, got %q", d.Pointer)
	}
	if c.Probe.Concurrency < 1 {
		v.fail("probe.concurrency", "probe.concurrency must be at least 1, got %d", c.Probe.Concurrency)
	}
	if *c.Probe.Retries < 0 || *c.Probe.Retries > 10 {
		v.fail("probe.retries", "probe.retries must be between 0 and 10, got %d", *c.Probe.Retries)
	}
	if b := *c.Probe.RetryBudget; b < 0 || b > 10 {
		v.fail("probe.retry_budget", "probe.retry_budget must be between 0 and 10, got %g", b)
	}
	if c.Probe.Manifest.MaxAssets < 1 {
		v.fail("probe.manifest.max_assets", "probe.manifest.max_assets must be at least 1, got %d", c.Probe.Manifest.MaxAssets)
	}
	for i, g := range c.CDN.Exclude {
		if err := checkGlob(g, true); err != "" {
			v.fail(fmt.Sprintf("cdn.exclude.%d", i), "cdn.exclude entry %q: %s", g, err)
		}
	}
	if c.Hook.Concurrency < 1 {
		v.fail("hook.concurrency", "hook.concurrency must be at least 1, got %d", c.Hook.Concurrency)
	}
	if n := *c.Diagnose.SearchTags; n < 0 || n > MaxSearchTags {
		v.fail("diagnose.search_tags", "diagnose.search_tags must be between 0 and %d, got %d", MaxSearchTags, n)
	}
	if c.CDN.Concurrency < 1 {
		v.fail("cdn.concurrency", "cdn.concurrency must be at least 1, got %d", c.CDN.Concurrency)
	}
	if c.CDN.Rate < 0 {
		v.fail("cdn.rate", "cdn.rate must not be negative, got %g", c.CDN.Rate)
	}
	for i, b := range c.CDN.BaseURLs {
		path := fmt.Sprintf("cdn.base_urls.%d", i)
		u, err := url.Parse(b)
		switch {
		case err != nil:
			v.fail(path, "invalid CDN base URL %q: %v", b, err)
		case u.Scheme != "http" && u.Scheme != "https":
			v.fail(path, "CDN base URL %q must start with http:// or https://", b)
		case u.Host == "":
			v.fail(path, "CDN base URL %q has no host", b)
		case u.User != nil:
			v.fail(path, "CDN base URL %q must not carry credentials", b)
		case u.RawQuery != "" || u.Fragment != "":
			v.fail(path, "CDN base URL %q must not have a query or fragment", b)
		}
	}
	seen := map[string]int{}
	for i, s := range c.Fleet.Static {
		line := s.Line
		if line == 0 {
			line = v.line(fmt.Sprintf("fleet.static.%d", i))
		}
		if s.Address == "" {
			v.failAt(line, "fleet.static entry %d has no address", i+1)
			continue
		}
		host, port, err := net.SplitHostPort(s.Address)
		if err != nil || host == "" {
			v.failAt(line, "fleet.static entry %d: address %q must be host:port", i+1, s.Address)
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			v.failAt(line, "fleet.static entry %d: invalid port in %q", i+1, s.Address)
		}
		id := s.ID
		if id == "" {
			id = s.Address
		}
		if j, dup := seen[id]; dup {
			v.failAt(line, "fleet.static entry %d: id %q repeats entry %d", i+1, id, j+1)
		}
		seen[id] = i
	}
	if e := c.Fleet.EC2; e != nil {
		v.oneOf("fleet.ec2.address", e.Address, AddressKinds)
		if e.Port < 1 || e.Port > 65535 {
			v.fail("fleet.ec2", "fleet.ec2.port must be between 1 and 65535, got %d", e.Port)
		}
	}
	for i, tg := range c.Fleet.TargetGroups {
		if !strings.HasPrefix(tg, "arn:") {
			v.fail(fmt.Sprintf("fleet.target_groups.%d", i), "target group %q must be an ARN", tg)
		}
	}
	for i, e := range c.Policy.Exceptions {
		if e.Image == "" {
			v.fail(fmt.Sprintf("policy.exceptions.%d", i), "policy exception %d has no image pattern", i+1)
		}
		if e.Reason == "" {
			v.fail(fmt.Sprintf("policy.exceptions.%d", i), "policy exception %d (%s) needs a reason", i+1, e.Image)
		}
		if e.Expires.IsZero() {
			v.fail(fmt.Sprintf("policy.exceptions.%d", i), "policy exception %d (%s) needs an expiry date (expires: YYYY-MM-DD): exceptions are temporary", i+1, e.Image)
		}
	}
	v.registry()
	for i, g := range c.Policy.Exclude {
		if err := checkGlob(g, false); err != "" {
			v.fail(fmt.Sprintf("policy.exclude.%d", i), "policy.exclude entry %q: %s", g, err)
		}
	}
	if c.Release.Platform != "" && strings.Count(c.Release.Platform, "/") < 1 {
		v.fail("release.platform", "release.platform must be os/arch[/variant], got %q", c.Release.Platform)
	}
	v.manifestFiles()
}

func (v *validator) claim(path string, c Claim) {
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		v.fail(path+".path", "%s.path must start with /, got %q", path, c.Path)
	}
	if c.Pointer != "" && !strings.HasPrefix(c.Pointer, "/") {
		v.fail(path+".pointer", "%s.pointer must be a JSON pointer starting with /, got %q", path, c.Pointer)
	}
	if c.Path != "" && c.Pointer == "" && c.Header == "" {
		v.fail(path, "%s.path needs a pointer (or a header)", path)
	}
}

// HasFleet reports whether any fleet source is configured.
func (c *Config) HasFleet() bool {
	return len(c.Fleet.Static) > 0 || c.Fleet.EC2 != nil || len(c.Fleet.TargetGroups) > 0
}

// checkGlob returns what is wrong with a path glob (path.Match syntax per segment, "**" as a
// whole segment for any number of them), or "". rooted globs (cdn.exclude) must be
// root-relative.
func checkGlob(g string, rooted bool) string {
	if strings.TrimSpace(g) == "" {
		return "is empty"
	}
	if rooted && !strings.HasPrefix(g, "/") {
		return "must be a root-relative path starting with /"
	}
	for _, seg := range strings.Split(strings.Trim(g, "/"), "/") {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			return "** must be a whole path segment (/**/)"
		}
		if _, err := path.Match(seg, ""); err != nil {
			return "not a valid glob: " + err.Error()
		}
	}
	return ""
}

// manifestPaths validates probe.manifest.paths: root-relative, distinct, not with path (the
// number of release.manifest_file entries is checked with the release; a release record's
// files are checked against the paths when it is read).
func (v *validator) manifestPaths(m Manifest) {
	if m.Path != "" {
		v.fail("probe.manifest.paths", "probe.manifest.path and probe.manifest.paths are exclusive: list every path under paths")
	}
	seen := map[string]bool{}
	for i, p := range m.Paths {
		at := fmt.Sprintf("probe.manifest.paths.%d", i)
		switch {
		case !strings.HasPrefix(p, "/"):
			v.fail(at, "probe.manifest.paths entry %d must start with /, got %q", i+1, p)
		case seen[p]:
			v.fail(at, "probe.manifest.paths entry %d repeats %q", i+1, p)
		}
		seen[p] = true
	}
}
