package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/polygraph-dev/polygraph/model"
)

// CDN checks that assets exist on the CDN's primary origin and its replicas. Each unique URL
// is requested once per run, however many instances reference it.
type CDN struct {
	o        options
	bases    []*url.URL
	hosts    map[string]*cdnHost
	requests counter
}

type cdnHost struct {
	client  *retryablehttp.Client
	limiter *rate.Limiter
	tr      *http.Transport
}

// NewCDN returns a checker for the given base URLs; the first is the primary origin, the rest
// are replicas. WithConcurrency bounds requests per host, WithRate limits them.
func NewCDN(baseURLs []string, opts ...Option) (*CDN, error) {
	o := build(opts)
	c := &CDN{o: o, hosts: map[string]*cdnHost{}}
	for _, b := range baseURLs {
		u, err := url.Parse(b)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("CDN base URL %q is not an http(s) URL", b)
		}
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
			u.RawPath = ""
		}
		c.bases = append(c.bases, u)
		key := u.Scheme + "://" + u.Host
		if c.hosts[key] != nil {
			continue
		}
		tr := &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         o.dial,
			MaxIdleConns:        o.concurrency,
			MaxIdleConnsPerHost: o.concurrency,
			MaxConnsPerHost:     o.concurrency,
			IdleConnTimeout:     30e9,
			TLSClientConfig:     o.tls,
			ForceAttemptHTTP2:   true,
		}
		hc := &http.Client{Transport: tr, Timeout: o.timeout, CheckRedirect: sameHostRedirects}
		h := &cdnHost{tr: tr, client: retryClient(hc, o.retries, o.backoff, o.waitMin, o.waitMax, o.maxRetryAfter, o.budget, &c.requests)}
		if o.rate > 0 {
			h.limiter = rate.NewLimiter(rate.Limit(o.rate), max(1, int(o.rate)))
		}
		c.hosts[key] = h
	}
	return c, nil
}

// Requests returns the number of HTTP requests sent to CDN origins so far.
func (c *CDN) Requests() int { return int(c.requests.n.Load()) }

// Close releases idle connections.
func (c *CDN) Close() {
	for _, h := range c.hosts {
		h.tr.CloseIdleConnections()
	}
}

// Resolve maps an asset ref to its URL on every base (primary first). A root-relative ref is
// appended to each base's path; an absolute URL is accepted only when it lies under a base.
// Anything else is refused with a reason, before any request is made.
func (c *CDN) Resolve(ref string) ([]string, string) {
	if len(c.bases) == 0 {
		return nil, "no cdn.base_urls configured"
	}
	var rel string
	switch {
	case strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "//"):
		rel = strings.TrimPrefix(ref, "/")
	default:
		u, err := url.Parse(ref)
		if err != nil {
			return nil, fmt.Sprintf("unparseable URL: %v", err)
		}
		if u.Scheme == "" && u.Host != "" {
			u.Scheme = c.bases[0].Scheme
		}
		if u.User != nil {
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
	if clean := path.Clean("/" + p); clean != "/"+p || strings.Contains(p, "\\") {
		return nil, "path escapes or is not clean (.., //, \\)"
	}
	urls := make([]string, len(c.bases))
	for i, b := range c.bases {
		full := b.Scheme + "://" + b.Host + b.EscapedPath() + rel
		u, err := url.Parse(full)
		if err != nil || u.Host != b.Host || u.Scheme != b.Scheme {
			return nil, "does not stay on the CDN host"
		}
		urls[i] = full
	}
	return urls, ""
}

type cdnJob struct {
	check *model.AssetCheck
	url   string
	slot  int // -1 primary, else replica index
}

// Check checks every unique asset. Assets that cannot be resolved onto a base are counted as
// skipped and never requested.
func (c *CDN) Check(ctx context.Context, assets []model.Asset) *model.CDNResult {
	res := &model.CDNResult{Checks: map[string]*model.AssetCheck{}}
	byHost := map[string][]cdnJob{}
	seenSkip := map[string]bool{}
	for _, a := range assets {
		if _, done := res.Checks[a.Ref]; done || seenSkip[a.Ref] {
			continue
		}
		urls, reason := c.Resolve(a.Ref)
		if reason != "" {
			seenSkip[a.Ref] = true
			res.Skipped++
			c.o.logger.Debug("asset skipped", "ref", a.Ref, "reason", reason)
			continue
		}
		ac := &model.AssetCheck{Ref: a.Ref, Integrity: a.Integrity, Primary: model.OriginCheck{URL: urls[0]}}
		res.Checks[a.Ref] = ac
		byHost[hostKey(c.bases[0])] = append(byHost[hostKey(c.bases[0])], cdnJob{check: ac, url: urls[0], slot: -1})
		if c.o.replicas {
			ac.Replicas = make([]model.OriginCheck, len(urls)-1)
			for i, u := range urls[1:] {
				ac.Replicas[i].URL = u
				byHost[hostKey(c.bases[i+1])] = append(byHost[hostKey(c.bases[i+1])], cdnJob{check: ac, url: u, slot: i})
			}
		}
	}
	var wg sync.WaitGroup
	for key, jobs := range byHost {
		h := c.hosts[key]
		sort.Slice(jobs, func(i, j int) bool { return jobs[i].url < jobs[j].url })
		work := make(chan cdnJob)
		for range min(c.o.concurrency, len(jobs)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range work {
					oc := c.head(ctx, h, j.url)
					if j.slot < 0 {
						j.check.Primary = oc
					} else {
						j.check.Replicas[j.slot] = oc
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(work)
			for _, j := range jobs {
				select {
				case work <- j:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, ac := range res.Checks {
		if ac.Primary.State == "" {
			ac.Primary = model.OriginCheck{URL: ac.Primary.URL, State: model.AssetUnchecked, Error: "not checked: " + deadlineWords(ctx)}
		}
		for i := range ac.Replicas {
			if ac.Replicas[i].State == "" {
				ac.Replicas[i] = model.OriginCheck{URL: ac.Replicas[i].URL, State: model.AssetUnchecked, Error: "not checked: " + deadlineWords(ctx)}
			}
		}
		ac.State = combine(ac)
	}
	res.Requests = c.Requests()
	return res
}

func hostKey(u *url.URL) string { return u.Scheme + "://" + u.Host }

// combine decides an asset's state from its origins' answers.
func combine(ac *model.AssetCheck) model.AssetState {
	switch ac.Primary.State {
	case model.AssetOK, model.AssetMissing:
		return ac.Primary.State
	}
	for _, r := range ac.Replicas {
		if r.State == model.AssetOK {
			return model.AssetDegraded
		}
	}
	return model.AssetUnchecked
}

// head asks one origin for one URL: HEAD, falling back to a one-byte ranged GET when HEAD is
// refused (405/501).
func (c *CDN) head(ctx context.Context, h *cdnHost, u string) model.OriginCheck {
	oc := model.OriginCheck{URL: u}
	if h.limiter != nil {
		if err := h.limiter.Wait(ctx); err != nil {
			oc.State, oc.Error = model.AssetUnchecked, "not checked: "+deadlineWords(ctx)
			return oc
		}
	}
	status, err := c.do(ctx, h, http.MethodHead, u)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		status, err = c.do(ctx, h, http.MethodGet, u)
	}
	oc.Status = status
	switch {
	case err != nil:
		oc.State, oc.Error = model.AssetUnchecked, err.Error()
	case status >= 200 && status < 300:
		oc.State = model.AssetOK
	case status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusGone:
		oc.State = model.AssetMissing
	default:
		oc.State, oc.Error = model.AssetUnchecked, fmt.Sprintf("%s %s answered %d", http.MethodHead, u, status)
	}
	return oc
}

func (c *CDN) do(ctx context.Context, h *cdnHost, method, u string) (int, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, fmt.Errorf("building request for %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "polygraph")
	if method == http.MethodGet {
		req.Header.Set("Range", "bytes=0-0")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return 0, cleanErr(err, method+" "+u)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
