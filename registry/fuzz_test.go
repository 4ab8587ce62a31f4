package registry

import (
	"archive/tar"
	"bytes"
	"testing"
)

// FuzzScanLayer feeds arbitrary bytes to the layer scanner, which reads untrusted tars.
func FuzzScanLayer(f *testing.F) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range []*tar.Header{
		{Name: "app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "app/.wh..wh..opq", Typeflag: tar.TypeReg},
		{Name: "app/.wh.old", Typeflag: tar.TypeReg},
		{Name: "./app/m.json", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644},
	} {
		tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write([]byte("{}"))
		}
	}
	tw.Close()
	f.Add(b.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, err := scanLayer(bytes.NewReader(data), "app/m.json", 1<<10)
		if err != nil {
			return
		}
		switch lr.State {
		case stateAbsent, stateFile, stateNotRegular, stateWhiteout, stateOpaque, stateParentNotDir:
		default:
			t.Fatalf("state %q", lr.State)
		}
		if lr.State == stateFile && lr.Size <= 1<<10 && int64(len(lr.data)) != lr.Size {
			t.Fatalf("size %d, data %d bytes", lr.Size, len(lr.data))
		}
	})
}
