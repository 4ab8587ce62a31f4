package probe

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// redirects follows a CDN redirect only when its target resolves onto a base URL of the same
// origin; otherwise the 3xx answer is the response (and the asset unchecked).
func (c *CDN) redirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 || hostKey(req.URL) != hostKey(via[0].URL) {
		return http.ErrUseLastResponse
	}
	if _, reason := c.Resolve(req.URL.String()); reason != "" {
		return http.ErrUseLastResponse
	}
	return nil
}

// Resolve maps an asset ref to its URL on every base (primary first). A root-relative ref is
// appended to each base's path; an absolute URL is accepted only when it lies under a base.
// Anything else is refused with a reason, before any request is made: other hosts (including
// look-alikes such as "cdn.example.com.evil" and userinfo tricks such as
// "https://cdn.example.com@evil/"), other schemes (data:, file:, javascript:), protocol-relative
// refs to other hosts, and paths that are not clean once percent-decoded (".." and "."
// segments, "%2e%2e", encoded or literal slashes and backslashes that would escape the base
// path, control characters).
func (c *CDN) Resolve(ref string) ([]string, string) {
	if len(c.bases) == 0 {
		return nil, "no cdn.base_urls configured"
	}
	if strings.ContainsAny(ref, "\\\x00\r\n\t") {
		return nil, "backslash or control character in reference"
	}
	var rel string
	switch {
	case strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"):
		rel = strings.TrimPrefix(ref, "/")
	default:
		u, err := url.Parse(ref)
		if err != nil {
			return nil, "unparseable URL"
		}
		if u.Opaque != "" || (u.Scheme != "http" && u.Scheme != "https" && !(u.Scheme == "" && strings.HasPrefix(ref, "//"))) {
			return nil, "scheme is not http(s)"
		}
		if u.Scheme == "" {
			u.Scheme = c.bases[0].Scheme
		}
		if u.User != nil || strings.Contains(u.Host, "@") {
			return nil, "userinfo in URL"
		}
		for _, b := range c.bases {
			if u.Scheme == b.Scheme && strings.EqualFold(u.Host, b.Host) && strings.HasPrefix(u.EscapedPath(), b.EscapedPath()) {
				rel = strings.TrimPrefix(u.EscapedPath(), b.EscapedPath())
				if u.RawQuery != "" {
					rel += "?" + u.RawQuery
				}
				break
			}
		}
		if rel == "" {
			return nil, "outside the configured CDN base URLs"
		}
	}
	p := rel
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if p == "" || strings.HasSuffix(p, "/") {
		return nil, "directory, not a file"
	}
	decoded, err := url.PathUnescape(p)
	if err != nil {
		return nil, "bad percent-encoding in path"
	}
	if strings.ContainsAny(decoded, "\\") || strings.IndexFunc(decoded, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return nil, "backslash or control character in path"
	}
	if clean := path.Clean("/" + p); clean != "/"+p {
		return nil, "path is not clean (.., ., //)"
	}
	if clean := path.Clean("/" + decoded); clean != "/"+decoded || strings.Count(decoded, "/") != strings.Count(p, "/") {
		return nil, "path escapes the base once percent-decoded (%2e%2e, %2f)"
	}
	urls := make([]string, len(c.bases))
	for i, b := range c.bases {
		full := b.Scheme + "://" + b.Host + b.EscapedPath() + rel
		u, err := url.Parse(full)
		if err != nil || u.Host != b.Host || u.Scheme != b.Scheme || u.User != nil || !strings.HasPrefix(u.EscapedPath(), b.EscapedPath()) {
			return nil, "does not stay under the CDN base URL"
		}
		urls[i] = full
	}
	return urls, ""
}

func hostKey(u *url.URL) string { return u.Scheme + "://" + u.Host }
