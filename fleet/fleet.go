// Package fleet discovers the instances to probe. Every source (static list, EC2, target
// groups) implements Source; Discover merges them and removes duplicates.
package fleet

import (
	"context"
	"fmt"
	"slices"
	"strconv"

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
	share(out)
	return out, nil
}

// share makes targets with equal labels share one map, and equal digest claims one string:
// an EC2 fleet's instances carry a few label sets (zone, type, group, image) and one digest
// tag, and a map and strings of its own are about 450 bytes per instance for as long as the
// run lasts. The maps are read-only once discovered.
func share(ts []model.Target) {
	labels := map[string]map[string]string{}
	digests := map[string]string{}
	var key []byte
	var names []string
	for i := range ts {
		t := &ts[i]
		if d := t.ReportedDigest; d != "" {
			if same, ok := digests[d]; ok {
				t.ReportedDigest = same
			} else {
				digests[d] = d
			}
		}
		if len(t.Labels) == 0 {
			continue
		}
		names = names[:0]
		for k := range t.Labels {
			names = append(names, k)
		}
		slices.Sort(names)
		key = key[:0]
		for _, k := range names {
			// Lengths first, so no key or value can pass for another pair.
			key = strconv.AppendInt(key, int64(len(k)), 10)
			key = append(key, ':')
			key = append(key, k...)
			key = strconv.AppendInt(key, int64(len(t.Labels[k])), 10)
			key = append(key, ':')
			key = append(key, t.Labels[k]...)
		}
		if same, ok := labels[string(key)]; ok {
			t.Labels = same
		} else {
			labels[string(key)] = t.Labels
		}
	}
}
