//go:build unix

package run

import (
	"os"
	"syscall"
)

// fdsFree returns how many more file descriptors this process may open: the soft
// RLIMIT_NOFILE (which the Go runtime raises to the hard limit at start) less those open now,
// or -1 when the limit cannot be read.
func fdsFree() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return -1
	}
	open := 16 // a guess where the open descriptors cannot be listed
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			open = len(ents)
			break
		}
	}
	return max(int(rl.Cur)-open, 0)
}
