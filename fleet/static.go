package fleet

import (
	"context"

	"github.com/polygraph-dev/polygraph/model"
)

// Static is a fixed list of instances, as written in fleet.static.
type Static []model.Target

// Name returns "static".
func (Static) Name() string { return "static" }

// Targets returns the list; an entry without an ID is named by its address.
func (s Static) Targets(context.Context) ([]model.Target, error) {
	out := make([]model.Target, len(s))
	for i, t := range s {
		if t.ID == "" {
			t.ID = t.Address
		}
		t.Source = "static"
		out[i] = t
	}
	return out, nil
}
