// Package fleet discovers the instances to probe. Every source (static list, EC2, target
// groups) implements Source; Discover merges them and removes duplicates.
package fleet

import (
	"context"
	"fmt"

	"github.com/polygraph-dev/polygraph/model"
)

// Source lists instances.
type Source interface {
	// Name names the source in errors ("static", "ec2").
	Name() string
	// Targets lists the instances the source knows now.
	Targets(ctx context.Context) ([]model.Target, error)
}

// Discover lists every source's targets, merged and de-duplicated by address (the first
// source to name an address wins; later ones add labels it lacks). A target without an
// address (one that cannot be dialed) is de-duplicated by its ID instead.
func Discover(ctx context.Context, sources ...Source) ([]model.Target, error) {
	// Every source is listed first, so the merged list and its index are allocated once at
	// their final size: a fleet of thousands is not copied again and again as it grows.
	lists := make([][]model.Target, len(sources))
	total := 0
	for i, s := range sources {
		ts, err := s.Targets(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s instances: %w", s.Name(), err)
		}
		lists[i] = ts
		total += len(ts)
	}
	out := make([]model.Target, 0, total)
	byAddr := make(map[string]int, total)
	for i, ts := range lists {
		for _, t := range ts {
			key := t.Address
			if key == "" {
				key = "id:" + t.ID
			}
			if j, dup := byAddr[key]; dup {
				for k, v := range t.Labels {
					if _, ok := out[j].Labels[k]; !ok {
						if out[j].Labels == nil {
							out[j].Labels = map[string]string{}
						}
						out[j].Labels[k] = v
					}
				}
				continue
			}
			byAddr[key] = len(out)
			out = append(out, t)
		}
		lists[i] = nil // merged: the source's copy can go
	}
	return out, nil
}
