package awsfake

import (
	"encoding/xml"
	"net/http"
	"net/url"
)

// queryAction is the operation a query-protocol request (Auto Scaling, ELBv2) names.
func queryAction(body []byte) string {
	v, _ := url.ParseQuery(string(body))
	return v.Get("Action")
}

// queryFail answers a query-protocol request with AWS's XML error document: Type Sender for
// a client error, Receiver for a 5xx.
func queryFail(w http.ResponseWriter, xmlns string, status int, code, msg string) {
	type xerr struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type resp struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     xerr     `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}
	kind := "Sender"
	if status >= 500 {
		kind = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(resp{Xmlns: xmlns, Error: xerr{kind, code, msg}, RequestID: "fake-request"})
}
