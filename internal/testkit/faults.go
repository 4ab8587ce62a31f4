package testkit

import (
	"bytes"
	"compress/gzip"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// fault answers the manifest path according to the spec's fault knobs, reporting whether it
// did.
func (f *Fleet) fault(w http.ResponseWriter, r *http.Request, s Spec) bool {
	manifest := []byte("{}")
	if s.Build != nil {
		manifest = s.Build.Manifest
	}
	switch {
	case s.RedirectLoop:
		n, _ := strconv.Atoi(r.URL.Query().Get("hop"))
		http.Redirect(w, r, f.ManifestPath+"?hop="+strconv.Itoa(n+1), http.StatusFound)
	case s.RedirectTo != "":
		http.Redirect(w, r, s.RedirectTo, http.StatusFound)
	case s.ResetMidBody:
		resetMidBody(w, manifest)
	case s.Truncate:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(manifest)+100))
		w.Write(manifest) // the server closes the connection: the body is short
	case s.BodySize > 0:
		streamBody(w, r, s.BodySize, s.Chunked, f.done)
	case s.GzipBomb > 0:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipBomb(s.GzipBomb))
	case s.Drip > 0:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(manifest)))
		rc := http.NewResponseController(w)
		for i := range manifest {
			w.Write(manifest[i : i+1])
			rc.Flush()
			t := time.NewTimer(s.Drip)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return true
			case <-f.done:
				t.Stop()
				return true
			}
		}
	default:
		return false
	}
	return true
}

// resetMidBody writes the headers and half the body, then resets the TCP connection (RST, not
// FIN: SO_LINGER 0).
func resetMidBody(w http.ResponseWriter, body []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	buf.Write(body[:len(body)/2])
	buf.Flush()
	raw := conn
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	raw.Close()
}

// streamBody writes n bytes of a JSON document ({"files": {...padding...}}) in 32 KiB chunks,
// generating them as it goes: the server never holds the body.
func streamBody(w http.ResponseWriter, r *http.Request, n int64, chunked bool, done chan struct{}) {
	w.Header().Set("Content-Type", "application/json")
	if !chunked {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	chunk := bytes.Repeat([]byte(" "), 32<<10)
	head := []byte(`{"files": {"main.js": "/static/js/main.js"}`)
	if int64(len(head))+1 > n {
		w.Write(bytes.Repeat([]byte(" "), int(n)))
		return
	}
	w.Write(head)
	left := n - int64(len(head)) - 1
	for left > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		default:
		}
		c := chunk[:min(int64(len(chunk)), left)]
		if _, err := w.Write(c); err != nil {
			return
		}
		left -= int64(len(c))
	}
	w.Write([]byte("}"))
}

var (
	bombs     sync.Map // decoded size -> stream
	bombOnce  sync.Once
	bombBlock []byte // one gzip member holding 1 MiB of spaces
)

// gzipBomb returns a gzip stream that decodes to a valid JSON document of about n bytes,
// mostly whitespace, compressed about a thousandfold. It is a series of gzip members (RFC 1952
// allows several; readers decode them as one stream), so it costs no compression per size.
func gzipBomb(n int64) []byte {
	bombOnce.Do(func() { bombBlock = gzipBytes(bytes.Repeat([]byte(" "), 1<<20)) })
	if b, ok := bombs.Load(n); ok {
		return b.([]byte)
	}
	var buf bytes.Buffer
	buf.Write(gzipBytes([]byte(`{"files": {}`)))
	for left := n; left > 1<<20; left -= 1 << 20 {
		buf.Write(bombBlock)
	}
	buf.Write(gzipBytes([]byte("}")))
	b, _ := bombs.LoadOrStore(n, buf.Bytes())
	return b.([]byte)
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
