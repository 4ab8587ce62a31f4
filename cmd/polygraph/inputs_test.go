//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Release record and CA files are read through a size cap: a device or a FIFO is exit 2
// naming the file, never an out-of-memory crash or a hang.
func TestVerifyRefusesUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fleet := "fleet:\n  static:\n    - {id: a, address: \"127.0.0.1:1\"}\n"
	tests := []struct{ name, config, stderr string }{
		{"record is a device", "release:\n  image: 127.0.0.1:1/web:v1\n  record: /dev/zero\n" + fleet, `release record: reading "/dev/zero": not a regular file (a device)`},
		{"record is a FIFO", "release:\n  image: 127.0.0.1:1/web:v1\n  record: " + fifo + "\n" + fleet, `release record: reading "` + fifo + `": not a regular file (a named pipe)`},
		{"CA is a device", fleet + "probe:\n  tls: {ca_file: /dev/zero}\n", `probe.tls.ca_file: reading "/dev/zero": not a regular file (a device)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(cfg, []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := polygraph(t, nil, "verify", "--config", cfg, "--timeout", "10s")
			if code != 2 || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.stderr)
			}
		})
	}
}
