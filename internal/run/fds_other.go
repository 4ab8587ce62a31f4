//go:build !unix

package run

// fdsFree is unknown (-1) where there is no RLIMIT_NOFILE.
func fdsFree() int { return -1 }
