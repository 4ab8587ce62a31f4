package model

// AssetState is the outcome of checking one asset on the CDN.
type AssetState string

// Asset states.
const (
	AssetOK        AssetState = "ok"
	AssetMissing   AssetState = "missing"   // 403/404/410 on the primary (and no replica has it)
	AssetUnchecked AssetState = "unchecked" // could not be checked: unknown, not missing
	AssetDegraded  AssetState = "degraded"  // primary failing (5xx), a replica serves it
)

// OriginCheck is the answer of one origin (the primary or a replica) for one asset.
type OriginCheck struct {
	// URL is the URL asked; it is kept only for answers a report names (not OK).
	URL    string     `json:"url"`
	Status int        `json:"status,omitempty"`
	State  AssetState `json:"state"`
	Error  string     `json:"error,omitempty"`
}

// AssetCheck is the result of checking one unique asset reference.
type AssetCheck struct {
	Ref     string
	Primary OriginCheck
	// Replicas holds the answers of the replica origins, in base_urls order, when checked.
	Replicas []OriginCheck
	State    AssetState
	// Integrity holds, for each hash some manifest expects of this asset's bytes, the outcome
	// when it is not a match: instances may expect different hashes for one URL, and each is
	// judged against its own. Hashes the bytes matched are not kept.
	Integrity []IntegrityCheck
}

// IntegrityCheck is the outcome of checking an asset's bytes against one expected hash.
type IntegrityCheck struct {
	// Integrity is the hash expected ("sha384:...", as in model.Asset).
	Integrity string
	// Error is set when the bytes do not match it.
	Error string
	// Unchecked says why the bytes could not be checked against it (the body could not be
	// read, or the hash is not one polygraph can compute): unknown, not wrong.
	Unchecked string
}

// Origin returns the answer of origin slot: 0 is the primary, 1.. the replicas.
func (c *AssetCheck) Origin(slot int) *OriginCheck {
	if slot == 0 {
		return &c.Primary
	}
	return &c.Replicas[slot-1]
}

// Problem reports whether a report names this asset: not OK on the primary, missing on a
// replica, a replica that could not be asked, or bytes that mismatch or could not be checked.
func (c *AssetCheck) Problem() bool {
	if c.State != AssetOK || len(c.Integrity) > 0 {
		return true
	}
	for _, r := range c.Replicas {
		if r.State == AssetMissing || r.State == AssetUnchecked {
			return true
		}
	}
	return false
}

// CDNResult is the outcome of checking every unique asset of a run.
type CDNResult struct {
	// Checks holds, keyed by Asset.Ref, the assets a report names (AssetCheck.Problem). An
	// asset checked and found OK on every origin is only counted in Checked: a run of 40,000
	// assets keeps no record of the ones that are fine.
	Checks map[string]*AssetCheck
	// Checked is the number of unique assets checked.
	Checked int
	// Skipped is the number of unique references never requested (outside the CDN bases).
	Skipped int
	// Requests is the number of HTTP requests sent to CDN origins.
	Requests int
	// Unchecked is the number of unique assets whose existence is unknown: no origin gave a
	// usable answer (5xx, 429, timeouts, retry budget spent, the run ending first).
	Unchecked int
	// IntegrityChecked is the number of unique assets whose bytes were checked against every
	// hash their manifests carry.
	IntegrityChecked int
	// NotChecked lists the refs no origin was asked for before the run ended (its deadline, a
	// signal); they are counted in Unchecked and have no entry in Checks.
	NotChecked []string
	// PrimaryDown is set when the primary origin gave no HTTP response at all to any request
	// (refused, reset or timed out every time): the CDN could not be checked.
	PrimaryDown string
}
