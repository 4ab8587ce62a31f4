package probe

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFullJitterStaysUnderTheExponentialCeiling(t *testing.T) {
	minW, maxW := 100*time.Millisecond, 2*time.Second
	for attempt, ceiling := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		var top time.Duration
		for range 2000 {
			d := FullJitter(minW, maxW, attempt, nil)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: waited %s, outside [0, %s]", attempt, d, ceiling)
			}
			top = max(top, d)
		}
		// Full jitter spreads over the whole range, not just its top (as "equal jitter" would)
		// or a fixed value (no jitter): 2000 draws land near the ceiling.
		if top < ceiling*8/10 {
			t.Errorf("attempt %d: the longest of 2000 waits is %s, want near %s", attempt, top, ceiling)
		}
	}
	if d := FullJitter(minW, maxW, 1000, nil); d > maxW {
		t.Errorf("attempt 1000 waited %s, over the cap", d)
	}
}

func TestRetryAfterIsHonouredButCapped(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b := withRetryAfter(func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Millisecond }, 10*time.Second, func() time.Time { return now })
	resp := func(status int, ra string) *http.Response {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	cases := []struct {
		name string
		resp *http.Response
		want time.Duration
	}{
		{"429 seconds", resp(429, "3"), 3 * time.Second},
		{"503 seconds", resp(503, "2"), 2 * time.Second},
		{"429 over the cap", resp(429, "3600"), 10 * time.Second},
		{"429 absurd", resp(429, "99999999999999999"), 10 * time.Second},
		{"503 date", resp(503, now.Add(5*time.Second).Format(http.TimeFormat)), 5 * time.Second},
		{"503 date in the past", resp(503, now.Add(-time.Hour).Format(http.TimeFormat)), 0},
		{"500 ignores it", resp(500, "3"), time.Millisecond},
		{"garbage falls back", resp(429, "soon"), time.Millisecond},
		{"negative falls back", resp(429, "-5"), time.Millisecond},
		{"no response", nil, time.Millisecond},
	}
	for _, tc := range cases {
		if got := b(0, 0, 0, tc.resp); got != tc.want {
			t.Errorf("%s: waited %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	cases := []struct {
		name   string
		status int
		err    error
		want   bool
	}{
		{"200", 200, nil, false},
		{"404", 404, nil, false},
		{"429", 429, nil, true},
		{"500", 500, nil, true},
		{"501", 501, nil, false},
		{"502", 502, nil, true},
		{"503", 503, nil, true},
		{"504", 504, nil, true},
		{"refused", 0, syscall.ECONNREFUSED, true},
		{"reset", 0, syscall.ECONNRESET, true},
		{"truncated body", 0, &transportErr{io.ErrUnexpectedEOF}, true},
		{"per-request timeout", 0, context.DeadlineExceeded, true},
		{"cancelled", 0, context.Canceled, false},
		{"too large", 0, fmt.Errorf("reading: %w", ErrTooLarge), false},
		{"bad encoding", 0, fmt.Errorf("reading: %w", ErrEncoding), false},
		{"certificate", 0, &CertError{Err: errors.New("x509: expired")}, false},
	}
	for _, tc := range cases {
		var resp *http.Response
		if tc.status != 0 {
			resp = &http.Response{StatusCode: tc.status}
		}
		if got := Retryable(resp, tc.err); got != tc.want {
			t.Errorf("%s: Retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBudget checks the budget's arithmetic, and that the last attempt of a request (which
// go-retryablehttp submits to CheckRetry before it checks RetryMax) takes nothing from it.
func TestBudget(t *testing.T) {
	b := NewBudget(0.2, 2)
	for range 10 {
		b.attempt()
	}
	// Nothing answered yet: only the floor.
	allowed := 0
	for range 10 {
		if b.allow() {
			allowed++
		}
	}
	if allowed != 2 {
		t.Errorf("allowed %d retries before any answer, want the floor, 2", allowed)
	}
	for range 10 {
		b.answer()
	}
	for range 10 {
		if b.allow() {
			allowed++
		}
	}
	if allowed != 4 { // 0.2·10 answered + 2
		t.Errorf("allowed %d retries, want 4", allowed)
	}
	if first, retries, denied := b.Stats(); first != 10 || retries != 4 || denied != 16 {
		t.Errorf("stats %d/%d/%d, want 10/4/16", first, retries, denied)
	}

	b = NewBudget(0, 5)
	policy := retryPolicy(b, 1)
	st := &tries{n: 2} // the second (and last) attempt of a request with 1 retry
	ctx := context.WithValue(context.Background(), triesKey{}, st)
	if retry, _ := policy(ctx, &http.Response{StatusCode: 503}, nil); retry {
		t.Error("the last attempt was retried")
	}
	if _, retries, denied := b.Stats(); retries != 0 || denied != 0 {
		t.Errorf("the last attempt took from the budget: %d retries, %d denied", retries, denied)
	}
	st.n = 1
	if retry, _ := policy(ctx, &http.Response{StatusCode: 503}, nil); !retry {
		t.Error("the first attempt was not retried")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if retry, _ := policy(cctx, &http.Response{StatusCode: 503}, nil); retry {
		t.Error("retried after the context ended")
	}
}

func TestReadBody(t *testing.T) {
	doc := []byte(`{"files": {"main.js": "/static/js/main.js"}}`)
	enc := func(name string, b []byte) []byte {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch name {
		case "gzip":
			w = gzip.NewWriter(&buf)
		case "zlib":
			w = zlib.NewWriter(&buf)
		case "flate":
			w, _ = flate.NewWriter(&buf, flate.BestCompression)
		}
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	big := bytes.Repeat([]byte(" "), 10<<20)
	resp := func(encoding string, body []byte, length int64) *http.Response {
		h := http.Header{}
		if encoding != "" {
			h.Set("Content-Encoding", encoding)
		}
		return &http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: length}
	}
	const limit = 1 << 20
	cases := []struct {
		name    string
		resp    *http.Response
		want    []byte
		wantErr error
	}{
		{"plain", resp("", doc, int64(len(doc))), doc, nil},
		{"gzip", resp("gzip", enc("gzip", doc), -1), doc, nil},
		{"deflate (zlib, RFC 9110)", resp("deflate", enc("zlib", doc), -1), doc, nil},
		{"deflate (raw)", resp("deflate", enc("flate", doc), -1), doc, nil},
		{"Content-Length over the cap, refused unread", resp("", nil, 300<<20), nil, ErrTooLarge},
		{"plain over the cap", resp("", big, -1), nil, ErrTooLarge},
		{"gzip bomb", resp("gzip", enc("gzip", big), -1), nil, ErrTooLarge},
		{"deflate bomb", resp("deflate", enc("zlib", big), -1), nil, ErrTooLarge},
		{"not gzip", resp("gzip", doc, -1), nil, ErrEncoding},
		{"corrupt gzip", resp("gzip", append(enc("gzip", doc)[:20], "garbage garbage"...), -1), nil, ErrEncoding},
		{"brotli never asked for", resp("br", doc, -1), nil, ErrEncoding},
	}
	for _, tc := range cases {
		got, err := readBody(context.Background(), tc.resp, limit, make(chan struct{}, 1), nil)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v", tc.name, got, err)
		}
	}
	// A body cut short is a transport error (retryable), not an encoding problem.
	r := resp("gzip", nil, -1)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(enc("gzip", doc)[:15]), errReader{io.ErrUnexpectedEOF}))
	if _, err := readBody(context.Background(), r, limit, nil, nil); errors.Is(err, ErrEncoding) || !Retryable(nil, err) {
		t.Errorf("a gzip body cut short: %v (retryable %v)", err, Retryable(nil, err))
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestReadCappedNeverGrowsPastTheCap(t *testing.T) {
	for _, limit := range []int64{0, 1, 100, 32 << 10, 3 << 20} {
		body := strings.Repeat("x", int(limit))
		got, err := readCapped(context.Background(), strings.NewReader(body), limit, make(chan struct{}, 1))
		if err != nil || int64(len(got)) != limit || int64(cap(got)) > limit+1 {
			t.Errorf("limit %d: len %d cap %d err %v", limit, len(got), cap(got), err)
		}
		if _, err := readCapped(context.Background(), strings.NewReader(body+"y"), limit, nil); !errors.Is(err, ErrTooLarge) {
			t.Errorf("limit %d, one byte more: %v", limit, err)
		}
	}
}

// TestBudgetCountsAnAnswerOnce: go-retryablehttp consults CheckRetry twice for a response its
// response handler read; the answer earns the budget once.
func TestBudgetCountsAnAnswerOnce(t *testing.T) {
	b := NewBudget(1, 0)
	policy := retryPolicy(b, 3)
	ctx := context.WithValue(context.Background(), triesKey{}, &tries{n: 1})
	resp := &http.Response{StatusCode: http.StatusOK}
	for range 2 {
		if retry, _ := policy(ctx, resp, nil); retry {
			t.Fatal("a 200 retried")
		}
	}
	if got := b.answered.Load(); got != 1 {
		t.Errorf("answered = %d, want 1", got)
	}
	// A 503 earns nothing.
	if retry, _ := policy(context.WithValue(context.Background(), triesKey{}, &tries{n: 1}), &http.Response{StatusCode: 503}, nil); !retry {
		t.Error("a 503 with budget left was not retried")
	}
	if got := b.answered.Load(); got != 1 {
		t.Errorf("answered = %d after a 503, want 1", got)
	}
}
