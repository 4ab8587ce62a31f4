// Package verify is the judge: a pure function from the expected release and what the probes
// observed to a report of typed findings. It does no I/O; package report renders its report.
package verify
