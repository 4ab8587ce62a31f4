// Package registry reads releases out of an OCI registry: it resolves an image reference to its
// release digest set, reads the served manifest out of the image, and builds release records.
package registry
