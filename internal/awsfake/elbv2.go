package awsfake

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// TargetGroup is one ELBv2 target group the fake knows.
type TargetGroup struct {
	ARN     string
	Name    string
	Type    string // instance | ip | lambda | alb
	Port    int
	Targets []RegisteredTarget
}

// RegisteredTarget is one target registered in a group.
type RegisteredTarget struct {
	ID     string // instance ID or IP address
	Port   int
	Health string // healthy, unhealthy, initial, draining, unused
}

// ELBv2 fakes DescribeTargetGroups and DescribeTargetHealth (query protocol, XML answers).
type ELBv2 struct {
	ec2    *EC2
	mu     sync.Mutex
	groups []TargetGroup
}

// Add registers target groups.
func (e *ELBv2) Add(g ...TargetGroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.groups = append(e.groups, g...)
}

const elbXmlns = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

func (e *ELBv2) action(_ *http.Request, body []byte) string { return queryAction(body) }

func (e *ELBv2) fail(w http.ResponseWriter, status int, code, msg string) {
	queryFail(w, elbXmlns, status, code, msg)
}

func (e *ELBv2) find(arn string) (TargetGroup, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.groups {
		if g.ARN == arn {
			return g, true
		}
	}
	return TargetGroup{}, false
}

type xmlMeta struct {
	RequestID string `xml:"RequestId"`
}

func (e *ELBv2) serve(w http.ResponseWriter, action string, p url.Values, _ []byte) {
	switch action {
	case "DescribeTargetGroups":
		type tg struct {
			ARN      string `xml:"TargetGroupArn"`
			Name     string `xml:"TargetGroupName"`
			Type     string `xml:"TargetType"`
			Port     int    `xml:"Port,omitempty"`
			Protocol string `xml:"Protocol,omitempty"`
		}
		type resp struct {
			XMLName xml.Name `xml:"DescribeTargetGroupsResponse"`
			Xmlns   string   `xml:"xmlns,attr"`
			Groups  []tg     `xml:"DescribeTargetGroupsResult>TargetGroups>member"`
			Meta    xmlMeta  `xml:"ResponseMetadata"`
		}
		out := resp{Xmlns: elbXmlns, Meta: xmlMeta{"fake-request"}}
		for _, arn := range members(p, "TargetGroupArns") {
			g, ok := e.find(arn)
			if !ok {
				e.fail(w, 400, "TargetGroupNotFound", "One or more target groups not found")
				return
			}
			out.Groups = append(out.Groups, tg{g.ARN, g.Name, g.Type, g.Port, "HTTP"})
		}
		write(w, out)
	case "DescribeTargetHealth":
		g, ok := e.find(p.Get("TargetGroupArn"))
		if !ok {
			e.fail(w, 400, "TargetGroupNotFound", "Target groups '"+p.Get("TargetGroupArn")+"' not found")
			return
		}
		type target struct {
			ID   string `xml:"Target>Id"`
			Port int    `xml:"Target>Port"`
			HCP  string `xml:"HealthCheckPort"`
			St   string `xml:"TargetHealth>State"`
		}
		type resp struct {
			XMLName xml.Name `xml:"DescribeTargetHealthResponse"`
			Xmlns   string   `xml:"xmlns,attr"`
			Targets []target `xml:"DescribeTargetHealthResult>TargetHealthDescriptions>member"`
			Meta    xmlMeta  `xml:"ResponseMetadata"`
		}
		out := resp{Xmlns: elbXmlns, Meta: xmlMeta{"fake-request"}}
		for _, t := range g.Targets {
			out.Targets = append(out.Targets, target{t.ID, t.Port, strconv.Itoa(t.Port), t.Health})
		}
		write(w, out)
	default:
		e.fail(w, 400, "InvalidAction", "Could not find operation "+action)
	}
}

func write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "text/xml")
	xml.NewEncoder(w).Encode(v)
}
