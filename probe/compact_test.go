package probe

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/polygraph-dev/polygraph/model"
)

// setField gives field f of v a non-zero value derived from seed.
func setField(t *testing.T, f reflect.Value, seed int) {
	t.Helper()
	switch f.Kind() {
	case reflect.String:
		f.SetString(fmt.Sprintf("value-%d", seed))
	case reflect.Int, reflect.Int64, reflect.Int32:
		f.SetInt(int64(seed + 1))
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		setField(t, s.Index(0), seed)
		f.Set(s)
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		f.Set(p)
	case reflect.Struct:
		for i := range f.NumField() {
			if f.Field(i).CanSet() && f.Type().Field(i).Type != reflect.TypeOf(time.Time{}) {
				setField(t, f.Field(i), seed+i)
			}
		}
	default:
		t.Fatalf("setField: no value for kind %s: extend the test", f.Kind())
	}
}

func testTargets() []model.Target {
	return []model.Target{
		{ID: "a", Address: "127.0.1.1:8080", Labels: map[string]string{"az": "a"}, LaunchedAt: time.Unix(1, 0), Source: "static"},
		{ID: "b", Address: "127.0.1.2:8080", Source: "static", ReportedDigest: "sha256:x"},
	}
}

// Every field of an observation survives the compact record, whatever it holds: a field added
// to model.Observation and forgotten in tailKey makes two observations that differ only in it
// come back alike, and this test fails.
func TestRecordsKeepEveryField(t *testing.T) {
	o := build([]Option{WithScheme("http"), WithManifest("/m.json", "", "")})
	targets := testTargets()
	base := model.Observation{Target: targets[0], ManifestURL: "http://127.0.1.1:8080/m.json"}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if name == "Target" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			other := base
			setField(t, reflect.ValueOf(&other).Elem().Field(i), i)
			other.Target = targets[1]
			if name != "ManifestURL" {
				other.ManifestURL = "http://127.0.1.2:8080/m.json"
			}
			// other differs from base only in the field (besides its own target and URL).
			r := newRecords(&o, 2)
			r.put(0, base)
			r.put(1, other)
			got := (&Observations{recs: r, targets: targets}).All()
			if !reflect.DeepEqual(got[0], base) {
				t.Errorf("first observation changed:\n got %+v\nwant %+v", got[0], base)
			}
			other.Target = targets[1]
			if !reflect.DeepEqual(got[1], other) {
				t.Errorf("field %s lost:\n got %+v\nwant %+v", name, got[1], other)
			}
		})
	}
}

// Instances that answered alike share one tail; a record is two words.
func TestRecordsShareIdenticalAnswers(t *testing.T) {
	if s := unsafe.Sizeof(record{}); s > 16 {
		t.Errorf("record is %d bytes, want at most 16", s)
	}
	o := build([]Option{WithScheme("http"), WithManifest("/m.json", "", "")})
	assets := []model.Asset{{Ref: "/a.js"}}
	targets := make([]model.Target, 1000)
	r := newRecords(&o, len(targets))
	for i := range targets {
		targets[i] = model.Target{ID: fmt.Sprint("i", i), Address: fmt.Sprintf("127.0.%d.%d:8080", 1+i/254, 1+i%254)}
		obs := model.Observation{Target: targets[i], ManifestURL: "http://" + targets[i].Address + "/m.json", Reached: true,
			Attempts: 1, HTTPStatus: 200, ManifestSHA256: "s", Assets: assets, AssetsSHA256: "h", ReportedVersion: "v1"}
		if i%10 == 0 {
			obs.ReportedVersion = "v0"
		}
		r.put(i, obs)
	}
	if len(r.tails) != 2 {
		t.Errorf("%d distinct tails for 2 kinds of answer", len(r.tails))
	}
	got := (&Observations{recs: r, targets: targets}).All()
	if got[10].ReportedVersion != "v0" || got[11].ReportedVersion != "v1" || got[11].Target.ID != "i11" || got[11].ManifestURL != "http://127.0.1.12:8080/m.json" {
		t.Errorf("expanded wrong: %+v %+v", got[10], got[11])
	}
}

// Instances that failed alike share one tail too, though each error names its own address,
// and every error comes back as it was: with its address, in every field that named it, and
// untouched when it held a NUL.
func TestRecordsShareErrorsThatNameTheAddress(t *testing.T) {
	o := build([]Option{WithScheme("http"), WithManifest("/m.json", "", "")})
	targets := make([]model.Target, 500)
	want := make([]model.Observation, len(targets))
	r := newRecords(&o, len(targets))
	for i := range targets {
		a := fmt.Sprintf("127.0.%d.%d:80", 1+i/254, 1+i%254)
		targets[i] = model.Target{ID: fmt.Sprint("i", i), Address: a}
		obs := model.Observation{Target: targets[i], ManifestURL: "http://" + a + "/m.json", Attempts: 1,
			Error: "GET http://" + a + "/m.json: dial tcp " + a + ": connect: connection refused"}
		switch {
		case i == 7: // an address that is a prefix of another the error names
			obs.Error = "GET http://" + a + "/m.json: redirected to http://" + a + "80/m.json"
		case i == 8:
			obs.VersionError = "GET http://" + a + "/version: connection refused"
		case i == 9:
			obs.Error = "GET http://" + a + "/m.json: \x00address\x00 " + a
		}
		want[i] = obs
		r.put(i, obs)
	}
	if len(r.tails) > 5 {
		t.Errorf("%d distinct tails for 500 instances failing alike and 3 others", len(r.tails))
	}
	got := (&Observations{recs: r, targets: targets}).All()
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("instance %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
