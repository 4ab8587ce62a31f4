// Package regtest builds container images holding given files and pushes them to a registry:
// the in-process one NewServer starts on 127.0.0.1, or any other. Tests, the demo and the
// benchmarks share it.
package regtest
