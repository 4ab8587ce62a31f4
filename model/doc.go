// Package model holds the data that flows through polygraph: targets to probe, what the probes
// observed, the release expected to run, and the report the judge writes. It is a leaf: it
// imports nothing of polygraph's and does no I/O.
package model
