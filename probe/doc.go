// Package probe talks to the fleet: it fetches each instance's manifest and claims directly by
// address, and checks every referenced asset on the CDN and its replicas, politely (bounded
// concurrency, backoff with full jitter, a retry budget) and within hard limits.
package probe
