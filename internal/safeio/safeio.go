package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the error ReadFile returns for a directory, FIFO, socket or device.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error ReadFile returns for a file over the cap.
var ErrTooLarge = errors.New("file too large")

// Error is the error ReadFile returns: it names the file. Callers map it to a usage error
// (exit 2): the file given is not one polygraph can read.
type Error struct {
	Path string
	Err  error  // ErrNotRegular, ErrTooLarge or the error from the file system
	Info string // detail for the message: the kind of file, or the size and the cap
}

func (e *Error) Error() string {
	if e.Info != "" {
		return fmt.Sprintf("reading %q: %v (%s)", e.Path, e.Err, e.Info)
	}
	return fmt.Sprintf("reading %q: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ReadFile returns the contents of the regular file at path (symbolic links followed). A
// directory, FIFO, socket or device is refused before it is opened, so that a FIFO with no
// writer never blocks; a file larger than max bytes is refused, whether its size is known up
// front or it grows while being read.
func ReadFile(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	// The file may have been replaced between Stat and Open: check what was opened.
	if fi, err = f.Stat(); err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	if int64(len(data)) > max {
		return nil, &Error{Path: path, Err: ErrTooLarge, Info: "over the limit of " + Size(max)}
	}
	return data, nil
}

// Check reports, without reading, whether ReadFile would refuse fi for its kind or size.
func Check(path string, fi fs.FileInfo, max int64) error { return check(path, fi, max) }

func check(path string, fi fs.FileInfo, max int64) error {
	if !fi.Mode().IsRegular() {
		return &Error{Path: path, Err: ErrNotRegular, Info: kind(fi.Mode())}
	}
	if fi.Size() > max {
		return &Error{Path: path, Err: ErrTooLarge, Info: Size(fi.Size()) + ", over the limit of " + Size(max)}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0, m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// unwrapPath drops the *fs.PathError wrapper: Error already names the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Size formats n bytes for a message: "16 MiB", "1.5 KiB", "12 bytes".
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k && n%(k*k*k) == 0:
		return fmt.Sprintf("%d GiB", n/(k*k*k))
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k && n%(k*k) == 0:
		return fmt.Sprintf("%d MiB", n/(k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k && n%k == 0:
		return fmt.Sprintf("%d KiB", n/k)
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d bytes", n)
}
