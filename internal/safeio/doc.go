// Package safeio reads input files through a size cap, refusing anything that is not a regular
// file (a FIFO would hang, a device such as /dev/zero would never end).
package safeio
