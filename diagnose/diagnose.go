package diagnose

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
)

// Options tune a diagnosis.
type Options struct {
	// Logger receives debug logs; nil discards.
	Logger *slog.Logger
	// Record is the release record the config names, for its recorded_at; nil when there is
	// none (Diagnose then loads release.record itself).
	Record *model.ReleaseRecord
	// Registry adds registry client options (a cache directory).
	Registry []registry.Option
	// Transport is the HTTP transport to registries. The default is remote.DefaultTransport.
	Transport http.RoundTripper
	// Version is polygraph's version.
	Version string
}

// Input is what a diagnosis explains: the verify report and the release it was judged
// against (internal/run's Result holds both).
type Input struct {
	// Release is the expected release as resolved; nil takes the report's.
	Release *model.Release
	Report  *model.Report
}

// Diagnose explains a run: groups, the image behind each group, and the likely causes. Only
// a missing report or a configuration error is an error; what the registry could not answer
// is said in the attributions and counted in Diagnosis.Registry.
func Diagnose(ctx context.Context, cfg *config.Config, res Input, o Options) (*model.Diagnosis, error) {
	if res.Report == nil {
		return nil, errors.New("diagnosing: the run produced no report")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rep := res.Report
	d := &model.Diagnosis{Schema: model.DiagnosisSchema, Verdict: rep.Verdict, Report: rep,
		Groups: []model.DiagnosisGroup{}, Causes: []model.Cause{}}
	for _, i := range rep.Instances {
		if i.Status == model.StatusUnreachable {
			d.Unreachable = append(d.Unreachable, i.ID)
		}
	}
	rel := res.Release
	if rel == nil {
		rel = &rep.Release
	}
	rec := o.Record
	if rec == nil && cfg.Release.Record != "" {
		var err error
		if rec, err = registry.LoadRecord(cfg.Release.Record); err != nil {
			return nil, &config.Error{Msg: err.Error()}
		}
	}
	var recordedAt time.Time
	if rec != nil && !rec.RecordedAt.IsZero() {
		recordedAt = rec.RecordedAt.UTC()
		d.RecordedAt = &recordedAt
	}
	if rep.Verdict == model.VerdictError {
		return d, nil
	}
	d.Groups = Groups(rep)

	image := rel.Image
	if image == "" && rec != nil {
		image = rec.Image
	}
	repo, tag := splitImage(image)
	files := []string(cfg.Release.ManifestFiles)
	if len(files) == 0 && rec != nil {
		files = rec.ManifestFiles
		if rec.ManifestFile != "" {
			files = []string{rec.ManifestFile}
		}
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	cnt := &counter{base: base}
	client, err := registry.FromConfig(cfg, append([]registry.Option{registry.WithLogger(o.Logger), registry.WithPolygraphVersion(o.Version)},
		append(o.Registry, registry.WithTransport(cnt))...)...)
	if err != nil {
		return nil, &config.Error{File: cfg.File, Msg: err.Error()}
	}
	a := &attributor{
		client: client, log: o.Logger, rel: rel, repo: repo, tag: tag, platform: cfg.Release.Platform,
		files: files, searchTags: *cfg.Diagnose.SearchTags,
		records: map[string]recordResult{}, work: &d.Registry,
	}
	for i := range d.Groups {
		a.attribute(ctx, &d.Groups[i])
		at := &d.Groups[i].Attribution
		if at.Created == nil {
			for _, t := range at.Tags {
				if c := a.createdOf(t); !c.IsZero() {
					c = c.UTC()
					at.Created = &c
					break
				}
			}
		}
	}
	in := causeInput{rep: rep, groups: d.Groups, rel: rel, recordedAt: recordedAt, repo: repo, tag: tag}
	if cfg.Fleet.EC2 != nil {
		in.region = cfg.Fleet.EC2.Region
	}
	if rel.TagDigest != "" && repo != "" {
		if set, err := client.Resolve(ctx, repo+"@"+rel.TagDigest); err == nil {
			in.tagNow = set
		} else {
			d.Registry.Errors = append(d.Registry.Errors, err.Error())
		}
	}
	d.Causes = causes(in)
	if d.Causes == nil {
		d.Causes = []model.Cause{}
	}
	d.Registry.Requests = int(cnt.n.Load())
	return d, nil
}
