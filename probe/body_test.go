package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/polygraph-dev/polygraph/model"
)

// readBody returns exactly the bytes sent, whatever their size relative to the pooled blocks,
// whether the length was announced, however the reads are split, and whatever the size
// guessed for an unannounced body (none, half, exact, double).
func TestReadBodyReturnsExactlyTheBody(t *testing.T) {
	const limit = 1 << 20
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 100, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 7, smallBody + 1, limit} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rnd.IntN(256))
		}
		for _, guessed := range []int{-1, size / 2, size, 2 * size, 0} {
			announced := guessed == 0
			for _, split := range []string{"whole", "half", "bytes"} {
				if split == "bytes" && size > 3*blockSize+7 {
					continue
				}
				t.Run(fmt.Sprintf("%d/announced=%v/guess=%d/%s", size, announced, guessed, split), func(t *testing.T) {
					var r io.Reader = bytes.NewReader(data)
					switch split {
					case "half":
						r = iotest.HalfReader(r)
					case "bytes":
						r = iotest.OneByteReader(r)
					}
					cl := int64(-1)
					if announced {
						cl = int64(size)
					}
					var guess *atomic.Int64
					if guessed > 0 {
						guess = new(atomic.Int64)
						guess.Store(int64(guessed))
					}
					resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(r), ContentLength: cl}
					got, err := readBody(context.Background(), resp, limit, make(chan struct{}, 1), guess)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, data) {
						t.Fatalf("got %d bytes, want the %d sent", len(got), len(data))
					}
					if guess != nil && guess.Load() != int64(size) {
						t.Errorf("the guess for the next body is %d, want this one's size %d", guess.Load(), size)
					}
				})
			}
		}
	}
	over := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(make([]byte, limit+1))), ContentLength: -1}
	if _, err := readBody(context.Background(), over, limit, nil, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("one byte over the cap: err = %v, want ErrTooLarge", err)
	}
}

// TestUnannouncedBodiesReuseBuffers: a body whose length the answer does not give (chunked,
// or gzip-encoded) is read into a pooled buffer of the last such body's size rather than
// into 64 KiB blocks and then copied, so a fleet serving chunked manifests costs what one
// serving them with a Content-Length does: about 25 KB less allocated per 25 KB body. A gzip
// body is decoded by a reused reader.
func TestUnannouncedBodiesReuseBuffers(t *testing.T) {
	body := bytes.Repeat([]byte(`{"files":{"main.js":"/static/js/main.0123456789.js"}}`), 480)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(body)
	zw.Close()
	for _, tc := range []struct {
		name string
		resp func() *http.Response
	}{
		{"chunked", func() *http.Response {
			return &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: -1}
		}},
		{"gzip", func() *http.Response {
			return &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}}, Body: io.NopCloser(bytes.NewReader(zipped.Bytes())), ContentLength: int64(zipped.Len())}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			perRead := func(guess *atomic.Int64) uint64 {
				read := func() {
					got, err := readBody(context.Background(), tc.resp(), 1<<20, nil, guess)
					if err != nil || !bytes.Equal(got, body) {
						t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(body))
					}
					putBody(got)
				}
				read() // the guess learns the size; the pools fill
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 50 {
					read()
				}
				runtime.ReadMemStats(&after)
				return (after.TotalAlloc - before.TotalAlloc) / 50
			}
			blind := perRead(nil)
			guess := new(atomic.Int64)
			guessed := perRead(guess)
			if guess.Load() != int64(len(body)) {
				t.Errorf("guess %d after reading %d bytes", guess.Load(), len(body))
			}
			t.Logf("%d bytes allocated per %d-byte body with the guess, %d without", guessed, len(body), blind)
			if raceDetector {
				return // the pools drop what they are given at random: only the bytes read count
			}
			if blind < guessed+uint64(len(body))*3/4 {
				t.Errorf("%d bytes allocated per read with the guess, %d without: want about %d fewer", guessed, blind, len(body))
			}
			if tc.name == "gzip" {
				// A new gzip reader and its decompressor cost more than a body read with a
				// reused one.
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 20 {
					zr, _ := gzip.NewReader(bytes.NewReader(zipped.Bytes()))
					io.Copy(io.Discard, zr)
				}
				runtime.ReadMemStats(&after)
				if fresh := (after.TotalAlloc - before.TotalAlloc) / 20; guessed > fresh*3/4 {
					t.Errorf("%d bytes allocated per gzip body, where a new gzip reader alone is %d: readers are not reused", guessed, fresh)
				}
			}
		})
	}
}

// TestSizeGuessesArePerPath: an instance's manifest and its version endpoint, both answered
// chunked, are read with guesses of their own, so neither spoils the other's; every
// observation is whole.
func TestSizeGuessesArePerPath(t *testing.T) {
	manifest := []byte(`{"files":{` + strings.Repeat(`"a.js":"/static/js/a.js",`, 1000) + `"b.js":"/static/js/b.js"}}`)
	version := []byte(`{"version":"v2.31.0"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := manifest
		if r.URL.Path == "/version" {
			body = version
		}
		w.Write(body[:1])
		w.(http.Flusher).Flush() // chunked: no Content-Length
		w.Write(body[1:])
	}))
	defer srv.Close()
	targets := make([]model.Target, 20)
	for i := range targets {
		targets[i] = model.Target{ID: fmt.Sprint("i", i), Address: strings.TrimPrefix(srv.URL, "http://")}
	}
	p := New(WithConcurrency(4), WithVersionClaim(Claim{Path: "/version", Pointer: "/version"}))
	for _, o := range p.Probe(context.Background(), targets) {
		if !o.Reached || o.ManifestBytes != int64(len(manifest)) || o.ReportedVersion != "v2.31.0" || len(o.Assets) != 2 {
			t.Fatalf("%s: %+v", o.Target.ID, o)
		}
	}
	if g := p.sizeGuess("/asset-manifest.json").Load(); g != int64(len(manifest)) {
		t.Errorf("manifest guess %d, want %d", g, len(manifest))
	}
	if g := p.sizeGuess("/version").Load(); g != int64(len(version)) {
		t.Errorf("version guess %d, want %d", g, len(version))
	}
}
