// Package fetch is the benchmark's yardstick: the work polygraph verify does on a
// create-react-app fleet, written the obvious way with net/http and encoding/json. It GETs
// each manifest, hashes it, decodes it, dedupes the asset paths and HEADs each unique asset.
package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config says what to fetch.
type Config struct {
	// Targets are instance addresses (host:port); Host is sent as their Host header.
	Targets []string
	Host    string
	// ManifestPath is the manifest's URL path; CDN is the base URL assets are resolved onto.
	ManifestPath string
	CDN          string
	// Concurrency bounds instances fetched at once, CDNConcurrency HEADs at once.
	Concurrency, CDNConcurrency int
	// Timeout bounds each request.
	Timeout time.Duration
}

// Result counts what a run saw.
type Result struct {
	Manifests    int `json:"manifests"`
	Failed       int `json:"failed"`
	Digests      int `json:"digests"`
	UniqueAssets int `json:"unique_assets"`
	Missing      int `json:"missing"`
	CDNErrors    int `json:"cdn_errors"`
	// ManifestPhase and CDNPhase are how long each phase took, in seconds.
	ManifestPhase float64 `json:"manifest_phase_s"`
	CDNPhase      float64 `json:"cdn_phase_s"`
}

type craManifest struct {
	Files       map[string]string `json:"files"`
	Entrypoints []string          `json:"entrypoints"`
}

// Run does the work.
func Run(ctx context.Context, c Config) Result {
	// Each instance is asked once: no keep-alive, the connection closes after its answer.
	instances := &http.Client{Timeout: c.Timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu      sync.Mutex
		res     Result
		digests = map[[32]byte]bool{}
		assets  = map[string]bool{}
		start   = time.Now()
	)
	forEach(len(c.Targets), c.Concurrency, func(i int) {
		m, sum, err := getManifest(ctx, instances, "http://"+c.Targets[i]+c.ManifestPath, c.Host)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed++
			return
		}
		res.Manifests++
		digests[sum] = true
		for _, p := range m.Files {
			assets[p] = true
		}
		for _, p := range m.Entrypoints {
			assets["/"+strings.TrimPrefix(p, "/")] = true
		}
	})
	res.ManifestPhase = time.Since(start).Seconds()
	start = time.Now()
	res.Digests = len(digests)
	res.UniqueAssets = len(assets)
	paths := make([]string, 0, len(assets))
	for p := range assets {
		paths = append(paths, p)
	}
	tr := &http.Transport{MaxIdleConns: c.CDNConcurrency, MaxIdleConnsPerHost: c.CDNConcurrency}
	cdn := &http.Client{Timeout: c.Timeout, Transport: tr}
	base := strings.TrimSuffix(c.CDN, "/") + "/"
	forEach(len(paths), c.CDNConcurrency, func(i int) {
		status, err := head(ctx, cdn, base+strings.TrimPrefix(paths[i], "/"))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			res.CDNErrors++
		case status == http.StatusForbidden || status == http.StatusNotFound || status == http.StatusGone:
			res.Missing++
		case status/100 != 2:
			res.CDNErrors++
		}
	})
	tr.CloseIdleConnections()
	res.CDNPhase = time.Since(start).Seconds()
	return res
}

func getManifest(ctx context.Context, hc *http.Client, url, host string) (*craManifest, [32]byte, error) {
	var sum [32]byte
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, sum, err
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return nil, sum, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, sum, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, sum, fmt.Errorf("GET %s answered %d", url, resp.StatusCode)
	}
	sum = sha256.Sum256(body)
	var m craManifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, sum, err
	}
	return &m, sum, nil
}

func head(ctx context.Context, hc *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// forEach calls f(0..n-1) from at most workers goroutines.
func forEach(n, workers int, f func(int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(max(workers, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}
