package run

import (
	"net/url"

	"github.com/polygraph-dev/polygraph/config"
)

// fdReserve is how many file descriptors a run keeps free for what is not a connection of the
// stage at hand: the config, CA and report files, the registry client, logs, the runtime.
const fdReserve = 32

// fdConcurrency returns how many connections per host a stage may hold open at once across
// hosts: want, lowered so that hosts·n stays within the file descriptors this process may
// still open (less fdReserve), and never below 1. When the limit is unknown it is want.
func fdConcurrency(want, hosts int) int {
	free := fdsFree()
	if free < 0 || hosts < 1 {
		return want
	}
	return max(1, min(want, (free-fdReserve)/hosts))
}

// cdnHosts is the number of distinct origins the CDN check opens connections to.
func cdnHosts(cfg *config.Config) int {
	bases := cfg.CDN.BaseURLs
	if len(bases) == 0 {
		return 0
	}
	if cfg.CDN.CheckReplicas != nil && !*cfg.CDN.CheckReplicas {
		bases = bases[:1]
	}
	seen := map[string]bool{}
	for _, b := range bases {
		if u, err := url.Parse(b); err == nil {
			seen[u.Scheme+"://"+u.Host] = true
		}
	}
	return max(1, len(seen))
}
