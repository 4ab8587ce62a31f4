// Package policy finds container image references in deploy configuration and reports the ones
// that can change under a deployment (mutable tags, latest, disallowed registries).
package policy
