// Package bench holds the fleet benchmark's simulated workload: a large fleet and its CDN,
// started in a process of its own, and the config that points polygraph at them. The
// commands under bench/ (fleetbench, fetcher) and the profiling benchmark share it.
package bench
