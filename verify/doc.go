// Package verify is the judge: a pure function from the expected release and what the probes
// observed to a report of typed findings, and the renderers of that report. It does no I/O
// beyond writing a rendered report.
package verify
