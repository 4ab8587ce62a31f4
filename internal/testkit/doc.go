// Package testkit is polygraph's simulated world: a fleet with one real HTTP server per
// loopback address (127.0.1.1, 127.0.1.2, ...), a CDN, and the builds they serve, with knobs
// for latency, wrong content, missing assets and dead or hanging instances. Tests, the demo
// and the benchmarks share it. It only ever binds loopback addresses.
package testkit
