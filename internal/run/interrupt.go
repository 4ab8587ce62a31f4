package run

import (
	"context"
	"errors"

	"github.com/polygraph-dev/polygraph/model"
)

// interrupted marks the report of a run cancelled before it finished (a signal): what was not
// done is already unreachable or unchecked in it; the report says why, and a run that was cut
// short never passes. Findings it did raise stand.
func interrupted(ctx context.Context, r *model.Report) {
	why := "the run was cancelled"
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		why = cause.Error()
	}
	msg := why + " before it finished: work not done is reported as unreachable or unchecked"
	if r.Error != "" {
		msg += " (" + r.Error + ")"
	}
	r.Error = msg
	if r.Verdict != model.VerdictFail {
		r.Verdict = model.VerdictError
	}
}
