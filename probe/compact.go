package probe

import (
	"strings"
	"sync"

	"github.com/polygraph-dev/polygraph/model"
)

// While a fleet is probed, the observations of the instances already probed wait for the rest.
// Held as []model.Observation they cost about 330 bytes each (a copy of the target, a URL
// built per instance, a dozen fields), over half of all per-instance memory at that stage.
// Yet most instances of a fleet answer alike: the same build, the same status, the same
// claim, one attempt. So each finished observation is kept as a record of 16 bytes: a pointer
// to its remaining fields, shared by every instance that answered identically, and whether
// its manifest URL is the one the prober builds for the target. The target is the caller's
// targets[i]. Probe expands the records into observations only once every instance is done,
// when the bodies and connections in flight are gone; ProbeCompact hands them over as they
// are, and the judge builds each observation when it reads it.

// record is one probed instance, compactly.
type record struct {
	tail *model.Observation // every field but Target and a built ManifestURL; shared
	url  bool               // ManifestURL is scheme://address + manifest path
	addr bool               // the tail's errors hold addrMark where they named the address
}

// addrMark stands for the instance's address in the errors of a shared tail: instances that
// failed alike ("GET http://ADDRESS/asset-manifest.json: connection refused") then share one
// tail, as those that answered alike do, rather than a tail each. Errors holding a NUL (none
// polygraph writes: answers' text is quoted) keep the address.
const addrMark = "\x00address\x00"

// records holds the records of one probe run and the distinct tails they point to.
type records struct {
	o     *options
	recs  []record
	mu    sync.Mutex
	tails map[tailKey]*model.Observation
}

// tailKey identifies a tail: equal keys are equal observations once Target and ManifestURL
// are set aside. Assets and TLS are compared by identity: asset lists are shared per build,
// and a TLS record is the instance's own.
type tailKey struct {
	reached         bool
	err             string
	attempts        int
	manifestURL     string
	httpStatus      int
	manifestFormat  string
	manifestSHA256  string
	manifestBytes   int64
	manifestInvalid string
	assets          *model.Asset
	nAssets         int
	assetsSHA256    string
	skippedAssets   int
	reportedVersion string
	versionError    string
	reportedDigest  string
	digestError     string
	tls             *model.TLSInfo
}

func newRecords(o *options, n int) *records {
	return &records{o: o, recs: make([]record, n), tails: map[tailKey]*model.Observation{}}
}

// manifestURL is the URL the prober fetches a target's manifest from.
func (r *records) manifestURL(t model.Target) string {
	return r.o.scheme + "://" + t.Address + r.o.manifestPath
}

// put records the observation of targets[i]; obs.Target must be targets[i].
func (r *records) put(i int, obs model.Observation) {
	rec := record{}
	if obs.ManifestURL != "" && obs.ManifestURL == r.manifestURL(obs.Target) {
		rec.url = true
		obs.ManifestURL = ""
	}
	if a := obs.Target.Address; a != "" && namesAddress(obs, a) {
		rec.addr = true
		obs.Error = strings.ReplaceAll(obs.Error, a, addrMark)
		obs.VersionError = strings.ReplaceAll(obs.VersionError, a, addrMark)
		obs.DigestError = strings.ReplaceAll(obs.DigestError, a, addrMark)
	}
	obs.Target = model.Target{}
	k := tailKey{
		reached: obs.Reached, err: obs.Error, attempts: obs.Attempts, manifestURL: obs.ManifestURL,
		httpStatus: obs.HTTPStatus, manifestFormat: obs.ManifestFormat, manifestSHA256: obs.ManifestSHA256,
		manifestBytes: obs.ManifestBytes, manifestInvalid: obs.ManifestInvalid, nAssets: len(obs.Assets),
		assetsSHA256: obs.AssetsSHA256, skippedAssets: obs.SkippedAssets, reportedVersion: obs.ReportedVersion,
		versionError: obs.VersionError, reportedDigest: obs.ReportedDigest, digestError: obs.DigestError, tls: obs.TLS,
	}
	if len(obs.Assets) > 0 {
		k.assets = &obs.Assets[0]
	}
	r.mu.Lock()
	tail, ok := r.tails[k]
	if !ok {
		tail = new(model.Observation)
		*tail = obs
		r.tails[k] = tail
	}
	r.mu.Unlock()
	rec.tail = tail
	r.recs[i] = rec
}

// namesAddress reports whether an error of obs names address a, and no error holds a NUL (so
// addrMark stands for a and nothing else).
func namesAddress(obs model.Observation, a string) bool {
	errs := [...]string{obs.Error, obs.VersionError, obs.DigestError}
	names := false
	for _, e := range errs {
		if strings.IndexByte(e, 0) >= 0 {
			return false
		}
		names = names || strings.Contains(e, a)
	}
	return names
}

// Observations are the observations of one probe run, one per target in the targets' order,
// held as compact records: At builds one observation, All builds them all.
type Observations struct {
	recs    *records
	targets []model.Target
}

// Len returns the number of observations.
func (o *Observations) Len() int { return len(o.targets) }

// At returns the observation of the i-th target.
func (o *Observations) At(i int) model.Observation {
	rec := o.recs.recs[i]
	obs := *rec.tail
	obs.Target = o.targets[i]
	if rec.url {
		obs.ManifestURL = o.recs.manifestURL(o.targets[i])
	}
	if rec.addr {
		a := o.targets[i].Address
		obs.Error = strings.ReplaceAll(obs.Error, addrMark, a)
		obs.VersionError = strings.ReplaceAll(obs.VersionError, addrMark, a)
		obs.DigestError = strings.ReplaceAll(obs.DigestError, addrMark, a)
	}
	return obs
}

// All returns every observation.
func (o *Observations) All() []model.Observation {
	obs := make([]model.Observation, o.Len())
	for i := range obs {
		obs[i] = o.At(i)
	}
	return obs
}
