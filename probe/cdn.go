package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
)

// CDN checks that assets exist on the CDN's primary origin and its replicas. Each unique URL
// is requested once per run (retries aside), however many instances reference it.
type CDN struct {
	o        options
	bases    []*url.URL
	hosts    map[string]*cdnHost
	large    chan struct{}
	requests atomic.Int64
	fds      fdWatch
}

// integrityBodies is how many asset bodies over smallBody the CDN check may hold at once.
const integrityBodies = 4

type cdnHost struct {
	client *retryablehttp.Client
	tr     *http.Transport
}

// NewCDN returns a checker for the given base URLs; the first is the primary origin, the rest
// are replicas. Each origin host gets its own transport and connection pool; WithConcurrency
// bounds the requests in flight per host and WithRate limits their rate per host.
func NewCDN(baseURLs []string, opts ...Option) (*CDN, error) {
	o := build(opts)
	c := &CDN{o: o, hosts: map[string]*cdnHost{}, large: make(chan struct{}, integrityBodies)}
	for _, b := range baseURLs {
		u, err := url.Parse(b)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("CDN base URL %q is not a plain http(s) URL", b)
		}
		u.Host = strings.ToLower(u.Host)
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
			u.RawPath = ""
		}
		c.bases = append(c.bases, u)
	}
	for _, u := range c.bases {
		key := hostKey(u)
		if c.hosts[key] != nil {
			continue
		}
		tr := &http.Transport{
			Proxy:                  http.ProxyFromEnvironment, // the CDN is public; corporate proxies apply
			DialContext:            c.fds.dial(o.dial),
			MaxIdleConns:           o.concurrency,
			MaxIdleConnsPerHost:    o.concurrency,
			MaxResponseHeaderBytes: maxHeaderBytes,
			// Requests are a line and a few headers, answers mostly headers (HEAD) or bodies
			// read straight into their own buffers; Go's 4 KiB each way, for every idle
			// connection kept, would be a megabyte at 128 connections.
			WriteBufferSize:     512,
			ReadBufferSize:      2048,
			MaxConnsPerHost:     o.concurrency,
			IdleConnTimeout:     30 * time.Second,
			TLSHandshakeTimeout: o.timeout,
			// Bound the wait for headers too: a CDN that accepts and never answers must not
			// hold a slot until the run's deadline.
			ResponseHeaderTimeout: o.timeout,
			TLSClientConfig:       o.tls,
			ForceAttemptHTTP2:     true,
			DisableCompression:    true,
		}
		ct := &countingTransport{next: tr, counters: []*atomic.Int64{&c.requests}, onlyHost: key, timeout: o.timeout}
		if o.rate > 0 {
			ct.limiter = rate.NewLimiter(rate.Limit(o.rate), max(1, int(o.rate)))
		}
		// The per-request timeout is the transport's (see countingTransport), so time spent
		// waiting for the rate limiter does not count against it.
		hc := &http.Client{Transport: ct, CheckRedirect: c.redirects}
		c.hosts[key] = &cdnHost{tr: tr, client: retryClient(hc, &o)}
	}
	return c, nil
}

// OutOfFiles reports whether a dial failed because polygraph ran out of file descriptors
// (ErrNoFileDescriptors): the unchecked assets of such a run are a local limit's doing.
func (c *CDN) OutOfFiles() bool { return c.fds.hit.Load() }

// Requests returns the number of HTTP requests sent to CDN origins so far.
func (c *CDN) Requests() int { return int(c.requests.Load()) }

// Close releases idle connections.
func (c *CDN) Close() {
	for _, h := range c.hosts {
		h.tr.CloseIdleConnections()
	}
}

// cdnJob is one request: asset idx on origin slot (0 primary, 1.. replicas).
type cdnJob struct {
	idx, slot int32
}

// cdnAsset is one unique asset ref and every hash some manifest expects of its bytes.
type cdnAsset struct {
	ref         string
	integrities []string
}

// Check checks every unique asset. Assets that cannot be resolved onto a base, and those
// cdn.exclude names, are counted as skipped and never requested. An asset listed with
// different integrity hashes (instances serving different manifests for one URL) is fetched
// once and its bytes checked against each. To keep a large run lean, answers are kept
// compactly while the checks run, URLs are resolved again by the worker that requests them,
// and an AssetCheck is built only for the assets a report names (see model.AssetCheck.Problem);
// the others are counted in Checked.
func (c *CDN) Check(ctx context.Context, assets []model.Asset) *model.CDNResult {
	res := &model.CDNResult{Checks: map[string]*model.AssetCheck{}}
	todo := make([]cdnAsset, 0, len(assets))
	seen := make(map[string]int32, len(assets))
	for n, a := range assets {
		if n%1024 == 0 && ctx.Err() != nil {
			// The run ended before the check began: what is left is listed, never resolved.
			for _, a := range assets[n:] {
				if _, done := seen[a.Ref]; !done {
					seen[a.Ref] = -1
					res.NotChecked = append(res.NotChecked, a.Ref)
				}
			}
			res.Unchecked += len(res.NotChecked)
			break
		}
		if i, done := seen[a.Ref]; done {
			if i >= 0 && a.Integrity != "" && !slices.Contains(todo[i].integrities, a.Integrity) {
				todo[i].integrities = append(todo[i].integrities, a.Integrity)
			}
			continue
		}
		seen[a.Ref] = -1
		if excluded(c.o.exclude, a.Ref) {
			res.Skipped++
			c.o.logger.Debug("asset skipped", "ref", a.Ref, "reason", "cdn.exclude")
			continue
		}
		if _, reason := c.Resolve(a.Ref); reason != "" {
			res.Skipped++
			c.o.logger.Debug("asset skipped", "ref", a.Ref, "reason", reason)
			continue
		}
		seen[a.Ref] = int32(len(todo))
		ca := cdnAsset{ref: a.Ref}
		if a.Integrity != "" {
			ca.integrities = []string{a.Integrity}
		}
		todo = append(todo, ca)
	}
	origins := 1
	if c.o.replicas {
		origins = len(c.bases)
	}
	answers := make([]model.OriginCheck, len(todo)*origins)
	var (
		imu       sync.Mutex
		integrity = map[int32][]model.IntegrityCheck{}
		verified  atomic.Int64
	)
	byHost := map[string][]cdnJob{}
	for slot := range origins {
		key := hostKey(c.bases[slot])
		for i := range todo {
			byHost[key] = append(byHost[key], cdnJob{idx: int32(i), slot: int32(slot)})
		}
	}
	var wg sync.WaitGroup
	for key, jobs := range byHost {
		h := c.hosts[key]
		work := make(chan cdnJob)
		for range min(c.o.concurrency, len(jobs)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range work {
					a := &todo[j.idx]
					urls, _ := c.Resolve(a.ref)
					var oc model.OriginCheck
					if j.slot == 0 && c.o.integrity && len(a.integrities) > 0 {
						var ics []model.IntegrityCheck
						var checked bool
						oc, ics, checked = c.verifyBytesOnce(ctx, h, a.ref, urls[0], a.integrities)
						if checked {
							verified.Add(1)
						}
						if len(ics) > 0 {
							imu.Lock()
							integrity[j.idx] = ics
							imu.Unlock()
						}
					} else {
						oc = c.headOnce(ctx, h, a.ref, j.slot, urls[j.slot])
					}
					answers[int(j.idx)*origins+int(j.slot)] = oc
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
	res.Checked = len(todo) + len(res.NotChecked)
	res.IntegrityChecked = int(verified.Load())
	primaryAnswered, firstErr := false, ""
	for i, a := range todo {
		mine := answers[i*origins : (i+1)*origins]
		if ctx.Err() != nil && notAsked(mine) {
			// Never asked before the run ended: counted and listed, without building a check
			// (and a finding) per asset, so a run cut short ends promptly however many there are.
			res.Unchecked++
			res.NotChecked = append(res.NotChecked, a.ref)
			continue
		}
		ac := model.AssetCheck{Ref: a.ref, Primary: mine[0], Replicas: mine[1:], Integrity: integrity[int32(i)]}
		if ac.Primary.Status != 0 {
			primaryAnswered = true
		} else if firstErr == "" && ac.Primary.Error != "" {
			firstErr = ac.Primary.Error
		}
		for slot := range origins {
			if oc := ac.Origin(slot); oc.State == "" {
				urls, _ := c.Resolve(a.ref)
				*oc = model.OriginCheck{URL: urls[slot], State: model.AssetUnchecked, Error: "not checked: " + deadlineWords(ctx)}
			}
		}
		ac.State = combine(&ac)
		if ac.State == model.AssetUnchecked {
			res.Unchecked++
		}
		if ac.Problem() {
			ac.Replicas = append([]model.OriginCheck(nil), ac.Replicas...) // not the shared array
			res.Checks[a.ref] = &ac
		}
	}
	if len(todo) > 0 && !primaryAnswered && firstErr != "" && !errors.Is(ctx.Err(), context.Canceled) {
		// Not one HTTP response from the primary: the CDN could not be checked at all, which
		// is no finding about any asset but a run that could not verify. A run cancelled (a
		// signal) says nothing about the CDN.
		res.PrimaryDown = fmt.Sprintf("the primary CDN %s gave no HTTP response to any of %d asset request(s) (first: %s)",
			c.bases[0].Redacted(), len(todo), firstErr)
	}
	res.Requests = c.Requests()
	return res
}

// notAsked reports whether no origin was asked for an asset.
func notAsked(answers []model.OriginCheck) bool {
	for _, oc := range answers {
		if oc.State != "" {
			return false
		}
	}
	return true
}

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
func (c *CDN) head(ctx context.Context, h *cdnHost, u string) (oc model.OriginCheck) {
	oc.URL = u
	defer func() {
		if oc.State == model.AssetOK {
			oc.URL = "" // kept only for answers a report names
		}
	}()
	method := http.MethodHead
	status, err := c.do(ctx, h, method, u)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		method = http.MethodGet
		status, err = c.do(ctx, h, method, u)
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
		oc.State, oc.Error = model.AssetUnchecked, fmt.Sprintf("%s %s answered %d", method, u, status)
	}
	return oc
}

// verifyBytes GETs an asset whole (within the body cap) and checks it against each of
// integrities, the hashes manifests carry for it. It returns the outcome of every hash the
// bytes did not match (or could not be checked against), and whether the bytes were read and
// checked against all of them.
func (c *CDN) verifyBytes(ctx context.Context, h *cdnHost, u string, integrities []string) (model.OriginCheck, []model.IntegrityCheck, bool) {
	oc := model.OriginCheck{URL: u}
	all := func(why string) []model.IntegrityCheck {
		out := make([]model.IntegrityCheck, len(integrities))
		for i, in := range integrities {
			out[i] = model.IntegrityCheck{Integrity: in, Unchecked: why}
		}
		return out
	}
	st := &tries{}
	rctx := context.WithValue(ctx, triesKey{}, st)
	req, err := retryablehttp.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		oc.State, oc.Error = model.AssetUnchecked, fmt.Sprintf("building request for %s: %v", u, err)
		return oc, nil, false
	}
	req.Header.Set("User-Agent", "polygraph")
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := h.client.Do(req)
	if resp == nil {
		oc.State, oc.Error = model.AssetUnchecked, describe(rctx, err, "GET "+u, st).Error()
		return oc, nil, false
	}
	defer resp.Body.Close()
	oc.Status = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		oc.State = model.AssetMissing
		return oc, nil, false
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		oc.State, oc.Error = model.AssetUnchecked, fmt.Sprintf("GET %s answered %d", u, resp.StatusCode)
		return oc, nil, false
	}
	oc.State = model.AssetOK
	body, err := readBody(ctx, resp, c.o.maxBody, c.large, nil)
	if err != nil {
		return oc, all(fmt.Sprintf("reading GET %s: %v", u, err)), false
	}
	var out []model.IntegrityCheck
	checked := true
	for _, in := range integrities {
		var ie *manifest.IntegrityError
		switch err := manifest.VerifyIntegrity(in, body); {
		case errors.As(err, &ie):
			out = append(out, model.IntegrityCheck{Integrity: in, Error: ie.Error()})
		case err != nil:
			checked = false
			out = append(out, model.IntegrityCheck{Integrity: in, Unchecked: err.Error()})
		}
	}
	return oc, out, checked
}

func (c *CDN) do(ctx context.Context, h *cdnHost, method, u string) (int, error) {
	st := &tries{}
	ctx = context.WithValue(ctx, triesKey{}, st)
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, fmt.Errorf("building request for %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "polygraph")
	if method == http.MethodGet {
		req.Header.Set("Range", "bytes=0-0")
	}
	resp, err := h.client.Do(req)
	if resp == nil {
		return 0, describe(ctx, err, method+" "+u, st)
	}
	// A ranged GET answers one byte; a CDN ignoring Range is not read past 64 KiB.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil && ctx.Err() != nil {
		return 0, describe(ctx, err, method+" "+u, st)
	}
	return resp.StatusCode, nil
}
