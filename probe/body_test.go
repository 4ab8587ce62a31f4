package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/iotest"
)

// readBody returns exactly the bytes sent, whatever their size relative to the pooled blocks,
// whether the length was announced, and however the reads are split.
func TestReadBodyReturnsExactlyTheBody(t *testing.T) {
	const limit = 1 << 20
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 100, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 7, smallBody + 1, limit} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rnd.IntN(256))
		}
		for _, announced := range []bool{false, true} {
			for _, split := range []string{"whole", "half", "bytes"} {
				if split == "bytes" && size > 3*blockSize+7 {
					continue
				}
				t.Run(fmt.Sprintf("%d/announced=%v/%s", size, announced, split), func(t *testing.T) {
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
					resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(r), ContentLength: cl}
					got, err := readBody(context.Background(), resp, limit, make(chan struct{}, 1))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, data) {
						t.Fatalf("got %d bytes, want the %d sent", len(got), len(data))
					}
				})
			}
		}
	}
	over := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(make([]byte, limit+1))), ContentLength: -1}
	if _, err := readBody(context.Background(), over, limit, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("one byte over the cap: err = %v, want ErrTooLarge", err)
	}
}
