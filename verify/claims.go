package verify

import (
	"fmt"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// claims checks digests and looks for claims the evidence contradicts.
func (j *judge) claims() {
	digestsKnown := j.rel.Digest != "" || len(j.rel.Digests) > 0
	want := j.rel.Digest
	i := -1
	for o := range j.observations() {
		i++
		id := o.Target.ID
		run, hasRun := j.running[id]
		switch {
		case hasRun && run.unknown != "":
			j.add(model.Finding{Kind: model.KindDigestUnchecked, Severity: model.SeverityWarning, Instance: id,
				Message:  fmt.Sprintf("%s: %s could not tell which image it runs (%s): unknown, not wrong", id, run.source, run.unknown),
				Evidence: map[string]string{"source": run.source}})
		case hasRun && digestsKnown && run.other:
			// Evidence from the runtime stands whether or not the instance answered over HTTP.
			j.mismatch(int32(i))
			j.add(model.Finding{Kind: model.KindDigestMismatch, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s runs %s (per %s), which is not in the release digest set of %s", id, short(run.shown), run.source, j.relName()),
				Evidence: map[string]string{"want": want, "got": run.shown, "digest": "running", "source": run.source}})
		}
		if !o.Reached {
			continue
		}
		if digestsKnown && o.ReportedDigest != "" && !j.rel.HasDigest(o.ReportedDigest) {
			j.mismatch(int32(i))
			j.add(model.Finding{Kind: model.KindDigestMismatch, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s reported digest %s is not in the release digest set of %s", id, short(o.ReportedDigest), j.relName()),
				Evidence: map[string]string{"want": want, "got": o.ReportedDigest, "digest": "reported"}})
		}
		key, valid := j.keyAt(i)
		contentKnown := valid && j.expected != ""
		runsOther := digestsKnown && run.other
		servesOther := (contentKnown && key != j.expected) || runsOther
		servesRelease := contentKnown && key == j.expected && !runsOther

		var claimsRelease, claimsOther []string
		if j.rel.Version != "" && o.ReportedVersion != "" {
			if o.ReportedVersion == j.rel.Version {
				claimsRelease = append(claimsRelease, "version "+o.ReportedVersion)
			} else {
				claimsOther = append(claimsOther, "version "+o.ReportedVersion)
			}
		}
		if digestsKnown && o.ReportedDigest != "" {
			if j.rel.HasDigest(o.ReportedDigest) {
				claimsRelease = append(claimsRelease, "digest "+short(o.ReportedDigest))
			} else {
				claimsOther = append(claimsOther, "digest "+short(o.ReportedDigest))
			}
		}
		switch {
		case len(claimsRelease) > 0 && servesOther:
			what := "serves other content"
			got := key
			if runsOther {
				what, got = fmt.Sprintf("runs another image (%s, per %s)", short(run.shown), run.source), run.shown
			}
			j.mismatch(int32(i))
			j.add(model.Finding{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s claims %s (the release) but %s", id, strings.Join(claimsRelease, " and "), what),
				Evidence: map[string]string{"claim": strings.Join(claimsRelease, ", "), "want": j.expected, "got": got}})
		case len(claimsOther) > 0 && servesRelease:
			j.mismatch(int32(i))
			j.add(model.Finding{Kind: model.KindVersionLie, Severity: model.SeverityError, Instance: id,
				Message:  fmt.Sprintf("%s claims %s but serves the release %s", id, strings.Join(claimsOther, " and "), j.relName()),
				Evidence: map[string]string{"claim": strings.Join(claimsOther, ", "), "want": j.rel.Version, "got": key}})
		}
	}
}

func (j *judge) relName() string {
	switch {
	case j.rel.Version != "":
		return j.rel.Version
	case j.rel.Image != "":
		return j.rel.Image
	}
	return "the release"
}

// short abbreviates a digest for messages.
func short(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
