//go:build unix

package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, path string
		want       string // contents, when no error
		wantErr    error
		wantMsg    string
	}{
		{name: "regular", path: small, want: "hello"},
		{name: "symlink to regular", path: link, want: "hello"},
		{name: "exactly the cap", path: big + "", wantErr: nil, want: string(make([]byte, 2048))},
		{name: "fifo", path: fifo, wantErr: ErrNotRegular, wantMsg: `reading "` + fifo + `": not a regular file (a named pipe)`},
		{name: "directory", path: dir, wantErr: ErrNotRegular, wantMsg: `reading "` + dir + `": not a regular file (a directory)`},
		{name: "device", path: "/dev/zero", wantErr: ErrNotRegular, wantMsg: `reading "/dev/zero": not a regular file (a device)`},
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: fs.ErrNotExist, wantMsg: `reading "` + filepath.Join(dir, "nope") + `": no such file or directory`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var got []byte
			var err error
			go func() { got, err = ReadFile(tc.path, 2048); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFile blocked")
			}
			if tc.wantErr == nil {
				if err != nil || string(got) != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var se *Error
			if !errors.As(err, &se) || se.Path != tc.path {
				t.Fatalf("err = %#v, want *Error naming %q", err, tc.path)
			}
			if err.Error() != tc.wantMsg {
				t.Fatalf("message\n got %s\nwant %s", err, tc.wantMsg)
			}
		})
	}
}

func TestReadFileOverCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, 1<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	want := `reading "` + p + `": file too large (3 MiB, over the limit of 1 MiB)`
	if err.Error() != want {
		t.Fatalf("message\n got %s\nwant %s", err, want)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 5 << 30: "5 GiB", 3<<29 + 1: "1.5 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
	if !strings.HasPrefix(Size(1<<20+1), "1.0 MiB") {
		t.Errorf("Size(1MiB+1) = %q", Size(1<<20+1))
	}
}
