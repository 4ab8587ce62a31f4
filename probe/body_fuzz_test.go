package probe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
)

// FuzzReadBody: whatever an instance sends under whatever Content-Encoding, readBody returns at
// most the cap, or ErrTooLarge, ErrEncoding or a transport error; it never panics.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte(`{"files":{}}`), "")
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"), "gzip")
	f.Add([]byte("\x78\x9c\x03\x00\x00\x00\x00\x01"), "deflate")
	f.Add([]byte("garbage"), "br")
	f.Fuzz(func(t *testing.T, data []byte, enc string) {
		const limit = 4096
		h := http.Header{}
		h.Set("Content-Encoding", enc)
		resp := &http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(data)), ContentLength: -1}
		got, err := readBody(context.Background(), resp, limit, make(chan struct{}, 1), nil)
		if len(got) > limit {
			t.Fatalf("returned %d bytes over the %d cap", len(got), limit)
		}
		if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrEncoding) && !isTransport(err) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
