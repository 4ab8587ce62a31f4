package probe

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrTooLarge is returned when a body, as sent or once decoded, exceeds its cap.
var ErrTooLarge = errors.New("body exceeds the size cap")

// ErrEncoding is returned when a body's Content-Encoding is unknown or its bytes do not decode.
var ErrEncoding = errors.New("body cannot be decoded")

// acceptEncoding is what polygraph asks for. The transport's transparent gzip is disabled
// (DisableCompression): Go decodes only when it set Accept-Encoding itself, and then hides
// the encoding from us. We ask for gzip and deflate ourselves and decode them here, within
// the cap, so a hostile instance that sends an encoding we never asked for is handled the
// same way as one we did.
const acceptEncoding = "gzip, deflate"

// smallBody is how much of a body any reader may buffer freely; beyond it, a reader must hold
// one of the large-body slots, so memory stays bounded by concurrency·smallBody +
// slots·maxBody however many hostile instances send huge bodies at once.
const smallBody = 256 << 10

// readBody reads resp's body, decoding gzip or deflate, and caps both the bytes on the wire
// and the decoded bytes at limit. A Content-Length over the cap is refused before reading.
// large holds the large-body slots (nil: no limit). guess, when set, holds the size of the
// last body read whose length was not known beforehand (chunked, or decoded), and is updated.
func readBody(ctx context.Context, resp *http.Response, limit int64, large chan struct{}, guess *atomic.Int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d over %d bytes", ErrTooLarge, resp.ContentLength, limit)
	}
	wire := &cappedReader{r: resp.Body, left: limit}
	var r io.Reader = wire
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := getGzip(wire)
		if err != nil {
			return nil, wireErr(wire, fmt.Errorf("%w: gzip: %w", ErrEncoding, err))
		}
		defer putGzip(zr)
		r = zr
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped; some servers send raw DEFLATE. Tell them apart by
		// the zlib header.
		br := bufio.NewReader(wire)
		hdr, _ := br.Peek(2)
		if len(hdr) == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, wireErr(wire, fmt.Errorf("%w: deflate: %w", ErrEncoding, err))
			}
			defer zr.Close()
			r = zr
		} else {
			fr := flate.NewReader(br)
			defer fr.Close()
			r = fr
		}
	default:
		return nil, fmt.Errorf("%w: Content-Encoding %q was not asked for", ErrEncoding, enc)
	}
	hint, guessed := int64(0), false
	switch {
	case r == io.Reader(wire) && resp.ContentLength > 0:
		hint = resp.ContentLength // identity: the first block can hold the whole body
	case guess != nil:
		// Chunked or encoded: the fleet's bodies are nearly all of one size, so the last such
		// body's size is the first guess (a pooled buffer, no copy); a longer one reads on
		// in blocks.
		hint, guessed = guess.Load(), true
	}
	body, err := readCappedHint(ctx, r, limit, large, hint)
	if guessed && err == nil {
		guess.Store(int64(len(body)))
	}
	if err != nil {
		err = wireErr(wire, err)
		decoded := r != io.Reader(wire)
		switch {
		case decoded && errors.Is(err, ErrTooLarge) && !wire.over:
			err = fmt.Errorf("%w: decoded from %s, more than %d bytes", ErrTooLarge, resp.Header.Get("Content-Encoding"), limit)
		case decoded && !errors.Is(err, ErrTooLarge) && !isTransport(err):
			err = fmt.Errorf("%w: %w", ErrEncoding, err)
		}
	}
	return body, err
}

// gzipReaders holds gzip readers between bodies: a reader and its decompressor are about 45 KB,
// allocated anew for every gzip-encoded manifest otherwise.
var gzipReaders sync.Pool

// getGzip returns a gzip reader of r, reused when one is free.
func getGzip(r io.Reader) (*gzip.Reader, error) {
	zr, ok := gzipReaders.Get().(*gzip.Reader)
	if !ok {
		return gzip.NewReader(r)
	}
	if err := zr.Reset(r); err != nil {
		gzipReaders.Put(zr) // Reset makes it whole again for the next body
		return nil, err
	}
	return zr, nil
}

// putGzip closes zr and hands it back for the next body.
func putGzip(zr *gzip.Reader) {
	zr.Close()
	gzipReaders.Put(zr)
}

// isTransport reports whether err came from the connection rather than from decoding.
func isTransport(err error) bool {
	var te *transportErr
	return errors.As(err, &te)
}

// transportErr marks an error of the underlying body (connection reset, body cut short), so a
// decoder's error is not mistaken for one and vice versa.
type transportErr struct{ err error }

func (e *transportErr) Error() string { return e.err.Error() }
func (e *transportErr) Unwrap() error { return e.err }

// wireErr prefers the cap's error: a decoder fails with "unexpected EOF" when the wire was
// cut at the cap.
func wireErr(w *cappedReader, err error) error {
	if w.over {
		return fmt.Errorf("%w: more than %d bytes sent", ErrTooLarge, w.limit())
	}
	return err
}

// cappedReader passes at most left bytes through and remembers whether the source had more.
// Errors of the source are marked as transport errors.
type cappedReader struct {
	r     io.Reader
	left  int64
	read  int64
	over  bool
	probe [1]byte
}

func (c *cappedReader) limit() int64 { return c.read + c.left }

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		n, err := c.r.Read(c.probe[:])
		if n > 0 {
			c.over = true
			return 0, fmt.Errorf("%w: more than %d bytes sent", ErrTooLarge, c.read)
		}
		if err == io.EOF {
			return 0, io.EOF
		}
		if err != nil {
			return 0, &transportErr{err}
		}
		return 0, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	if err != nil && err != io.EOF {
		err = &transportErr{err}
	}
	return n, err
}

// readCapped reads r to its end, at most limit bytes; more is ErrTooLarge. It reads into
// pooled blocks of 64 KiB rather than a doubling buffer, so a body that turns out too large
// leaves no trail of abandoned copies, and holds more than smallBody only with one of the
// large-body slots. A body that fits is returned in one slice of its exact length, the only
// allocation a body costs once the pool is warm.
func readCapped(ctx context.Context, r io.Reader, limit int64, large chan struct{}) ([]byte, error) {
	return readCappedHint(ctx, r, limit, large, 0)
}

// blockSize is the size of the pooled read blocks.
const blockSize = 64 << 10

var blocks = sync.Pool{New: func() any { b := make([]byte, blockSize); return &b }}

// readCappedHint is readCapped with the expected size (a Content-Length, 0 when unknown): a
// body that fits in smallBody is then read straight into one buffer of at least its size
// (plus the byte that detects the end), reused from an earlier body when one is free.
func readCappedHint(ctx context.Context, r io.Reader, limit int64, large chan struct{}, hint int64) ([]byte, error) {
	if hint > 0 && hint < smallBody && hint <= limit {
		buf := getBody(int(hint) + 1)
		for {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			switch {
			case err == io.EOF:
				return buf, nil
			case err != nil:
				return nil, err
			case len(buf) == cap(buf): // longer than announced: read on in blocks
				rest, err := readBlocks(ctx, r, limit, large, int64(len(buf)))
				if err != nil {
					return nil, err
				}
				return append(buf, rest...), nil
			}
		}
	}
	return readBlocks(ctx, r, limit, large, 0)
}

// A fleet serves the same few manifests from every instance, so the bodies of one run are
// nearly all of one size: a body read with a known length goes into a buffer that the
// previous instance's body used, once its prober is done with it (putBody). Without that,
// 10,000 manifests of 25 KB are 250 MB allocated and collected, the garbage collector's
// largest cost in a run. Buffers are kept only up to smallBody, as sync.Pool keeps them:
// until two collections pass without their use.
var bodyPool sync.Pool

// getBody returns an empty buffer that holds at least n bytes, reused when one is free.
func getBody(n int) []byte {
	if b, ok := bodyPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, (n+4095)&^4095)
}

// putBody hands a body back for reuse; the caller must hold no reference into it (parsed
// manifests and claims copy what they keep).
func putBody(b []byte) {
	if cap(b) == 0 || cap(b) > smallBody+4096 {
		return
	}
	bodyPool.Put(&b)
}

// readBlocks reads the rest of r into pooled blocks, counting already bytes read before, and
// returns it in one slice of its exact length.
func readBlocks(ctx context.Context, r io.Reader, limit int64, large chan struct{}, already int64) ([]byte, error) {
	var (
		full  []*[]byte // filled blocks
		cur   = blocks.Get().(*[]byte)
		n     int // bytes in cur
		total = already
		held  bool
	)
	defer func() {
		for _, b := range full {
			blocks.Put(b)
		}
		blocks.Put(cur)
		if held {
			<-large
		}
	}()
	for {
		if n == blockSize {
			full = append(full, cur)
			cur, n = blocks.Get().(*[]byte), 0
			if total >= smallBody && !held && large != nil {
				select {
				case large <- struct{}{}:
					held = true
				case <-ctx.Done():
					return nil, &transportErr{ctx.Err()}
				}
			}
		}
		m, err := r.Read((*cur)[n:])
		n += m
		total += int64(m)
		if total > limit {
			return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
		}
		if err == io.EOF {
			out := make([]byte, 0, total-already)
			for _, b := range full {
				out = append(out, *b...)
			}
			return append(out, (*cur)[:n]...), nil
		}
		if err != nil {
			return nil, err
		}
	}
}
