package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// assets turns CDN answers into findings naming every instance that references the asset;
// an integrity finding names exactly the instances whose own manifest's hash the bytes
// contradict.
func (j *judge) assets() {
	cdn := j.in.CDN
	if cdn == nil {
		return
	}
	// Instances share asset lists per build: walk each distinct list once. A list is known by
	// its manifest's bytes, since equal asset sets may still expect different hashes.
	type list struct {
		assets []model.Asset
		ids    []string
		at     []int32 // the instances' positions
	}
	lists := map[string]*list{}
	var order []string
	i := -1
	for o := range j.observations() {
		i++
		if _, ok := j.keyAt(i); !ok || len(o.Assets) == 0 {
			continue
		}
		key := o.ManifestSHA256 + o.AssetsSHA256
		l := lists[key]
		if l == nil {
			l = &list{assets: o.Assets}
			lists[key] = l
			order = append(order, key)
		}
		l.ids = append(l.ids, o.Target.ID)
		l.at = append(l.at, int32(i))
	}
	// An asset is referenced by the instances of the lists that hold it; the assets of one
	// build share one sorted list of instance IDs rather than each copying thousands.
	refLists := map[string][]int{}
	hashLists := map[[2]string][]int{} // (ref, expected hash) -> lists expecting it
	notChecked := make(map[string]bool, len(cdn.NotChecked))
	for _, r := range cdn.NotChecked {
		notChecked[r] = true
	}
	var notCheckedIDs []string
	for n, h := range order {
		l := lists[h]
		for _, a := range l.assets {
			if notChecked[a.Ref] {
				notCheckedIDs = append(notCheckedIDs, l.ids...)
				break
			}
		}
		for _, a := range l.assets {
			ac := cdn.Checks[a.Ref]
			if ac == nil || !ac.Problem() {
				continue
			}
			refLists[a.Ref] = append(refLists[a.Ref], n)
			if a.Integrity != "" && len(ac.Integrity) > 0 {
				k := [2]string{a.Ref, a.Integrity}
				hashLists[k] = append(hashLists[k], n)
			}
		}
	}
	union := map[string][]string{}
	idsOf := func(ns []int) []string {
		if len(ns) == 0 {
			return nil
		}
		key := fmt.Sprint(ns)
		if ids, ok := union[key]; ok {
			return ids
		}
		var all []string
		for _, n := range ns {
			all = append(all, lists[order[n]].ids...)
		}
		ids := uniqueSorted(all)
		union[key] = ids
		return ids
	}
	// mismatch marks the instances of the lists numbered ns as mismatched.
	mismatch := func(ns []int) {
		for _, n := range ns {
			for _, i := range lists[order[n]].at {
				j.mismatch(i)
			}
		}
	}
	if len(cdn.NotChecked) > 0 {
		ids := uniqueSorted(notCheckedIDs)
		j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: ids,
			Message: fmt.Sprintf("%d asset(s) were not checked before the run ended (%s first), referenced by %d instance(s) (%s): unknown, not missing",
				len(cdn.NotChecked), cdn.NotChecked[0], len(ids), list3(ids))})
	}
	refs := make([]string, 0, len(refLists))
	for r := range refLists {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		ac, ids := cdn.Checks[ref], idsOf(refLists[ref])
		p := ac.Primary
		switch ac.State {
		case model.AssetMissing:
			mismatch(refLists[ref])
			j.add(model.Finding{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s answers %d: referenced by %d instance(s) (%s)", p.URL, p.Status, len(ids), list3(ids))})
		case model.AssetUnchecked:
			j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s could not be checked (%s): unknown, not missing", p.URL, p.Error)})
		case model.AssetDegraded:
			j.add(model.Finding{Kind: model.KindAssetDegraded, Severity: model.SeverityWarning, Instances: ids, URL: p.URL, Status: p.Status,
				Message: fmt.Sprintf("%s is failing on the primary (%s) but a replica serves it: degraded, not missing", p.URL, orStatus(p))})
		}
		if ac.State == model.AssetOK || ac.State == model.AssetMissing {
			for _, r := range ac.Replicas {
				switch {
				case r.State == model.AssetMissing && ac.State == model.AssetOK:
					j.add(model.Finding{Kind: model.KindAssetReplicaMissing, Severity: model.SeverityWarning, Instances: ids, URL: r.URL, Status: r.Status,
						Message: fmt.Sprintf("%s answers %d on a replica origin, while the primary has it", r.URL, r.Status)})
				case r.State == model.AssetUnchecked:
					j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: ids, URL: r.URL, Status: r.Status,
						Message: fmt.Sprintf("%s could not be checked on a replica origin (%s): unknown, not missing", r.URL, orStatus(r))})
				}
			}
		}
		for _, ic := range ac.Integrity {
			hids := idsOf(hashLists[[2]string{ref, ic.Integrity}])
			if len(hids) == 0 {
				continue
			}
			if ic.Error != "" {
				mismatch(hashLists[[2]string{ref, ic.Integrity}])
				j.add(model.Finding{Kind: model.KindAssetIntegrity, Severity: model.SeverityError, Instances: hids, URL: p.URL,
					Message:  fmt.Sprintf("%s: the CDN's bytes do not match the hash the manifest of %d instance(s) (%s) carries: %s", p.URL, len(hids), list3(hids), ic.Error),
					Evidence: map[string]string{"want": ic.Integrity}})
			}
			if ic.Unchecked != "" {
				j.add(model.Finding{Kind: model.KindAssetUnchecked, Severity: model.SeverityWarning, Instances: hids, URL: p.URL, Status: p.Status,
					Message: fmt.Sprintf("%s exists, but its bytes could not be checked against the manifest's hash (%s): unknown, not wrong", p.URL, ic.Unchecked)})
			}
		}
	}
}

func orStatus(o model.OriginCheck) string {
	if o.Error != "" {
		return o.Error
	}
	return fmt.Sprintf("status %d", o.Status)
}

func uniqueSorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	n := 0
	for i, x := range out {
		if i == 0 || x != out[n-1] {
			out[n] = x
			n++
		}
	}
	return out[:n]
}

// list3 names up to three items and counts the rest.
func list3(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
}
