package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Instance is one EC2 instance the fake knows.
type Instance struct {
	ID           string
	State        string // pending, running, stopping, stopped, shutting-down, terminated
	PrivateIP    string
	PublicIP     string
	PrivateDNS   string
	AZ           string
	InstanceType string
	Lifecycle    string // "spot", or "" for on-demand
	AMI          string
	LaunchTime   time.Time
	Tags         map[string]string
}

// EC2 fakes DescribeInstances (query protocol, XML answers, NextToken paging, filters).
type EC2 struct {
	mu        sync.Mutex
	instances []Instance
	pageSize  int
}

// Add registers instances.
func (e *EC2) Add(in ...Instance) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.instances = append(e.instances, in...)
}

// SetPageSize caps how many instances one DescribeInstances page holds (the request's
// MaxResults caps it further).
func (e *EC2) SetPageSize(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pageSize = n
}

func (e *EC2) action(_ *http.Request, body []byte) string {
	v, _ := url.ParseQuery(string(body))
	return v.Get("Action")
}

func (e *EC2) fail(w http.ResponseWriter, status int, code, msg string) {
	type xerr struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type resp struct {
		XMLName   xml.Name `xml:"Response"`
		Errors    []xerr   `xml:"Errors>Error"`
		RequestID string   `xml:"RequestID"`
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(resp{Errors: []xerr{{code, msg}}, RequestID: "fake-request"})
}

func (e *EC2) serve(w http.ResponseWriter, action string, p url.Values, _ []byte) {
	if action != "DescribeInstances" {
		e.fail(w, 400, "InvalidAction", "The action "+action+" is not valid for this web service.")
		return
	}
	filters, err := parseFilters(p)
	if err != nil {
		e.fail(w, 400, "InvalidParameterValue", err.Error())
		return
	}
	ids := members(p, "InstanceId")
	e.mu.Lock()
	size := e.pageSize
	if n, err := strconv.Atoi(p.Get("MaxResults")); err == nil && n > 0 {
		if len(ids) > 0 {
			e.mu.Unlock()
			e.fail(w, 400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
			return
		}
		size = min(size, n)
	}
	if len(ids) > 0 {
		size = len(ids) // instance IDs are answered in one page
	}
	start := 0
	if tok := p.Get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if err != nil || n < 0 {
			e.mu.Unlock()
			e.fail(w, 400, "InvalidParameterValue", "Invalid NextToken "+tok)
			return
		}
		start = n
	}
	// Only the page's instances are copied: the fake stays cheap beside the client it serves.
	var page []Instance
	matched := 0
	known := map[string]bool{}
	for i := range e.instances {
		in := &e.instances[i]
		if len(ids) > 0 {
			if !contains(ids, in.ID) {
				continue
			}
			known[in.ID] = true
		}
		if !filters.match(*in) {
			continue
		}
		if matched >= start && matched < start+size {
			page = append(page, *in)
		}
		matched++
	}
	e.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		e.fail(w, 400, "InvalidInstanceID.NotFound", fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(missing, ", ")))
		return
	}
	end := start + len(page)
	out := describeInstancesResponse{Xmlns: "http://ec2.amazonaws.com/doc/2016-11-15/", RequestID: "fake-request"}
	if end < matched {
		out.NextToken = fmt.Sprintf("page-%d", end)
	}
	// One reservation per instance, as an Auto Scaling group launches them.
	for i, in := range page {
		x := xmlInstance{
			ID: in.ID, ImageID: in.AMI, State: xmlState{Code: stateCode(in.State), Name: in.State},
			PrivateDNS: in.PrivateDNS, InstanceType: in.InstanceType,
			LaunchTime: in.LaunchTime.UTC().Format(time.RFC3339), AZ: in.AZ,
			PrivateIP: in.PrivateIP, PublicIP: in.PublicIP, Lifecycle: in.Lifecycle,
		}
		for k, v := range in.Tags {
			x.Tags = append(x.Tags, xmlTag{k, v})
		}
		out.Reservations = append(out.Reservations, xmlReservation{ID: fmt.Sprintf("r-%08d", start+i), Instances: []xmlInstance{x}})
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	xml.NewEncoder(w).Encode(out)
}

type describeInstancesResponse struct {
	XMLName      xml.Name         `xml:"DescribeInstancesResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	RequestID    string           `xml:"requestId"`
	Reservations []xmlReservation `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

type xmlReservation struct {
	ID        string        `xml:"reservationId"`
	Instances []xmlInstance `xml:"instancesSet>item"`
}

type xmlInstance struct {
	ID           string   `xml:"instanceId"`
	ImageID      string   `xml:"imageId"`
	State        xmlState `xml:"instanceState"`
	PrivateDNS   string   `xml:"privateDnsName"`
	InstanceType string   `xml:"instanceType"`
	LaunchTime   string   `xml:"launchTime"`
	AZ           string   `xml:"placement>availabilityZone"`
	PrivateIP    string   `xml:"privateIpAddress,omitempty"`
	PublicIP     string   `xml:"ipAddress,omitempty"`
	Lifecycle    string   `xml:"instanceLifecycle,omitempty"`
	Tags         []xmlTag `xml:"tagSet>item"`
}

type xmlState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func stateCode(s string) int {
	return map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}[s]
}

// filterSet is DescribeInstances' Filter.N.Name / Filter.N.Value.M.
type filterSet map[string][]string

func parseFilters(p url.Values) (filterSet, error) {
	f := filterSet{}
	for i := 1; ; i++ {
		name := p.Get(fmt.Sprintf("Filter.%d.Name", i))
		if name == "" {
			return f, nil
		}
		switch {
		case name == "instance-state-name", name == "availability-zone", name == "instance-id",
			name == "instance-type", name == "tag-key", strings.HasPrefix(name, "tag:"):
		default:
			return nil, fmt.Errorf("The filter '%s' is invalid", name)
		}
		f[name] = members(p, fmt.Sprintf("Filter.%d.Value", i))
	}
}

// match applies every filter (AND across filters, OR across a filter's values, * wildcards).
func (f filterSet) match(in Instance) bool {
	var one [1]string
	for name, values := range f {
		var have []string
		switch {
		case name == "instance-state-name":
			one[0], have = in.State, one[:]
		case name == "availability-zone":
			one[0], have = in.AZ, one[:]
		case name == "instance-id":
			one[0], have = in.ID, one[:]
		case name == "instance-type":
			one[0], have = in.InstanceType, one[:]
		case name == "tag-key":
			for k := range in.Tags {
				have = append(have, k)
			}
		default:
			if v, ok := in.Tags[strings.TrimPrefix(name, "tag:")]; ok {
				one[0], have = v, one[:]
			}
		}
		if !anyMatch(values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if p == v {
				return true
			}
			if ok, _ := path.Match(p, v); ok {
				return true
			}
		}
	}
	return false
}

// members reads a query-protocol list: prefix.1, prefix.2, ... (EC2 style) or
// prefix.member.1, ... (ELBv2 style).
func members(p url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := p[fmt.Sprintf("%s.%d", prefix, i)]
		if !ok {
			v, ok = p[fmt.Sprintf("%s.member.%d", prefix, i)]
		}
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
