package regtest

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// Counter is an http.RoundTripper that counts the requests it sends and the response body
// bytes read through it, to measure what a client downloads.
type Counter struct {
	// Base sends the requests. The default is http.DefaultTransport.
	Base http.RoundTripper

	requests, blobs, bytes atomic.Int64
}

// Stats are a Counter's figures.
type Stats struct {
	// Requests counts every request; BlobRequests the GETs of blobs (layers, configs).
	Requests, BlobRequests int64
	// Bytes counts response body bytes read.
	Bytes int64
}

// RoundTrip implements http.RoundTripper.
func (c *Counter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
		c.blobs.Add(1)
	}
	base := c.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bytes}
	}
	return resp, err
}

// Stats returns the figures so far.
func (c *Counter) Stats() Stats {
	return Stats{Requests: c.requests.Load(), BlobRequests: c.blobs.Load(), Bytes: c.bytes.Load()}
}

// Reset zeroes the figures.
func (c *Counter) Reset() {
	c.requests.Store(0)
	c.blobs.Store(0)
	c.bytes.Store(0)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
