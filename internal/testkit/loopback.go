package testkit

import (
	"context"
	"fmt"
	"net"
	"net/http"
)

// LoopbackDial dials only loopback addresses (127.0.0.0/8, ::1, localhost). Anything else is
// refused before any name lookup or packet, so a test that names a real host by mistake fails
// instead of sending traffic off the machine.
func LoopbackDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); (ip == nil && host != "localhost") || (ip != nil && !ip.IsLoopback()) {
		return nil, fmt.Errorf("testkit: refusing to dial %s: tests only talk to loopback", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// LoopbackTransport is an http.Transport that dials with LoopbackDial.
func LoopbackTransport() *http.Transport {
	return &http.Transport{DialContext: LoopbackDial, Proxy: nil, MaxIdleConnsPerHost: 16}
}
