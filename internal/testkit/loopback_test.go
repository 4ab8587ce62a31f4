package testkit

import (
	"context"
	"strings"
	"testing"
)

func TestLoopbackDialRefusesOtherHosts(t *testing.T) {
	// Only the refusal is exercised for other hosts: it happens before any lookup or dial.
	for _, addr := range []string{"registry.example.com:443", "10.0.0.1:80", "169.254.169.254:80", "[2001:db8::1]:443"} {
		_, err := LoopbackDial(context.Background(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "refusing to dial") {
			t.Errorf("LoopbackDial(%s) = %v, want a refusal", addr, err)
		}
	}
	cdn, err := StartCDN("/s/", CRABuild("x", 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	c, err := LoopbackDial(context.Background(), "tcp", strings.TrimSuffix(strings.TrimPrefix(cdn.URL, "http://"), "/s/"))
	if err != nil {
		t.Fatalf("loopback dial refused: %v", err)
	}
	c.Close()
}
