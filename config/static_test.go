package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// longFleet writes a config whose fleet.static list has n entries in the styles people write:
// flow and block mappings, labels, quotes, comments and blank lines between entries.
func longFleet(n int, extra string) string {
	var b strings.Builder
	b.WriteString("# a long static fleet\nrelease:\n  version: v1\nfleet:\n  static:\n")
	for i := range n {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "    - {id: web-%d, address: \"127.0.%d.%d:8080\"}\n", i, 1+i/254, 1+i%254)
		case 1:
			fmt.Fprintf(&b, "    - id: 'web-%d'\n      address: 127.0.%d.%d:8080\n      labels: {az: a%d}\n", i, 1+i/254, 1+i%254, i%3)
		case 2:
			fmt.Fprintf(&b, "    # entry %d\n\n    -\n      id: web-%d # trailing comment\n      address: \"127.0.%d.%d:8080\"\n", i, i, 1+i/254, 1+i%254)
		case 3:
			fmt.Fprintf(&b, "    - address: 127.0.%d.%d:8080\n      labels:\n        az: b\n        asg: \"store\"\n", 1+i/254, 1+i%254)
		default:
			fmt.Fprintf(&b, "    - {id: \"web-%d\",\n       address: \"127.0.%d.%d:8080\"}\n", i, 1+i/254, 1+i%254)
		}
	}
	b.WriteString(extra)
	b.WriteString("probe:\n  host: shop.example.test\n")
	return b.String()
}

// The chunked decoding of fleet.static gives exactly what decoding the whole document gives,
// lines included.
func TestStaticChunksDecodeLikeTheWholeDocument(t *testing.T) {
	for _, n := range []int{1, staticChunk - 1, staticChunk, 3*staticChunk + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := []byte(longFleet(n, "  target_groups: []\n"))
			l, ok := splitStatic(data)
			if !ok || len(l.items) != n {
				t.Fatalf("splitStatic: ok %v, %d items, want %d", ok, len(l.items), n)
			}
			if _, ok := decodeStatic(data, l); !ok {
				t.Fatal("decodeStatic refused a plain block list")
			}
			got, _, err := decode(data, "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			want, root, err := decodeDocument(data, "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range nodeAt(root, "fleet", "static").Content {
				want.Fleet.Static[i].Line = n.Line
			}
			if !reflect.DeepEqual(got, want) {
				for i := range min(len(got.Fleet.Static), len(want.Fleet.Static)) {
					if !reflect.DeepEqual(got.Fleet.Static[i], want.Fleet.Static[i]) {
						t.Fatalf("entry %d: got %+v, want %+v", i, got.Fleet.Static[i], want.Fleet.Static[i])
					}
				}
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Documents this reading is not sure of take the ordinary path, and so decode the same.
func TestStaticFallsBackToTheWholeDocument(t *testing.T) {
	cases := map[string]string{
		"flow list":         "fleet:\n  static: [{address: \"127.0.1.1:80\"}, {address: \"127.0.1.2:80\"}]\n",
		"anchor and alias":  "fleet:\n  static:\n    - &one {address: \"127.0.1.1:80\", labels: {az: a}}\n    - {address: \"127.0.1.2:80\", labels: {az: b}}\n",
		"merge from above":  "fleet:\n  static:\n    - address: 127.0.1.1:80\n      labels: &l {az: a}\n    - address: 127.0.1.2:80\n      labels: *l\n",
		"two documents":     "probe: {host: a}\n---\nfleet:\n  static:\n    - {address: \"127.0.1.1:80\"}\n",
		"static after ec2":  "fleet:\n  ec2: {region: r, port: 80}\n  static:\n    - {address: \"127.0.1.1:80\"}\n",
		"same indent items": "fleet:\n  static:\n  - {address: \"127.0.1.1:80\"}\n  - address: 127.0.1.2:80\n  target_groups: []\n",
		"quoted dash":       "fleet:\n  static:\n    - {address: \"127.0.1.1:80\", id: \"a\n    - b\"}\n",
		"no static":         "fleet:\n  target_groups: []\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _, gotErr := decode([]byte(doc), "f.yaml")
			want, _, wantErr := decodeDocument([]byte(doc), "f.yaml")
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if got == nil {
				return
			}
			for i := range got.Fleet.Static {
				got.Fleet.Static[i].Line = 0
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got.Fleet, want.Fleet)
			}
		})
	}
}

// An error in an entry far down a long list names that entry's line, by either path.
func TestStaticErrorsNameTheEntryLine(t *testing.T) {
	const n = 2*staticChunk + 10
	good := longFleet(n, "")
	lines := strings.Split(good, "\n")
	k := n - 1 - (n-1)%5 // a flow-style entry near the end
	bad := -1
	for i, l := range lines {
		if strings.Contains(l, fmt.Sprintf("id: web-%d,", k)) {
			lines[i] = strings.Replace(l, ":8080", "", 1)
			bad = i + 1
		}
	}
	if bad < 0 {
		t.Fatal("entry not found")
	}
	doc := strings.Join(lines, "\n")
	want := fmt.Sprintf("f.yaml:%d: fleet.static entry %d: address %q must be host:port", bad, k+1, fmt.Sprintf("127.0.%d.%d", 1+k/254, 1+k%254))
	cases := map[string]string{
		"chunked": doc,
		// An anchor in the list sends it down the ordinary path.
		"ordinary": strings.Replace(doc, "probe:", "    - &z {address: \"127.0.99.1:80\"}\nprobe:", 1),
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc), "f.yaml", "/")
			if err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		})
	}
	// An unknown key inside an entry gets the ordinary message, suggestion included.
	doc = strings.Replace(good, fmt.Sprintf("id: 'web-%d'", k-4), fmt.Sprintf("idd: 'web-%d'", k-4), 1)
	_, err := Parse([]byte(doc), "f.yaml", "/")
	if err == nil || !strings.Contains(err.Error(), `unknown key "idd" in fleet.static (did you mean "id"?)`) {
		t.Fatalf("got %v", err)
	}
}

// The list of a large fleet is never one node tree: decoding 10,000 entries allocates a
// fraction of what the whole-document tree would hold.
func BenchmarkDecodeLongFleet(b *testing.B) {
	data := []byte(longFleet(10000, ""))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decode(data, "f.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLongFleetWhole(b *testing.B) {
	data := []byte(longFleet(10000, ""))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeDocument(data, "f.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
