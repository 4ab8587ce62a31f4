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
	var out []model.Target
	byAddr := map[string]int{}
	for _, s := range sources {
		ts, err := s.Targets(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s instances: %w", s.Name(), err)
		}
		for _, t := range ts {
			key := t.Address
			if key == "" {
				key = "id:" + t.ID
			}
			if i, dup := byAddr[key]; dup {
				for k, v := range t.Labels {
					if _, ok := out[i].Labels[k]; !ok {
						if out[i].Labels == nil {
							out[i].Labels = map[string]string{}
						}
						out[i].Labels[k] = v
					}
				}
				continue
			}
			byAddr[key] = len(out)
			out = append(out, t)
		}
	}
	return out, nil
}
