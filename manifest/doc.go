// Package manifest parses front-end static-asset manifests (webpack, Vite, HTML, ...) into the
// canonical list of assets they reference. It is a leaf shared by the HTTP prober (bytes an
// instance serves) and the registry (bytes inside an image): it does no I/O.
package manifest
