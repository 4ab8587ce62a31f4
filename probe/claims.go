package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// claim reads a claim: from the JSON body of c.Path at c.Pointer, or a header of that
// response (of the manifest response when c.Path is empty).
func (in *instance) claim(ctx context.Context, c Claim, manifestResp *response) (value, problem string) {
	if c.Path == "" && c.Header == "" {
		return "", ""
	}
	r := manifestResp
	if c.Path != "" {
		r = in.get(ctx, c.Path)
	}
	where := in.p.o.scheme + "://" + in.t.Address + c.Path
	switch {
	case r.err != nil:
		return "", r.err.Error()
	case r.status != http.StatusOK:
		return "", fmt.Sprintf("GET %s answered %d", where, r.status)
	}
	if c.Pointer != "" && c.Path != "" {
		var doc any
		if err := json.Unmarshal(r.body, &doc); err != nil {
			return "", fmt.Sprintf("GET %s: not JSON: %v", where, err)
		}
		v, err := pointer(doc, c.Pointer)
		if err != nil {
			return "", fmt.Sprintf("GET %s: %v", where, err)
		}
		return v, ""
	}
	v := r.header.Get(c.Header)
	if v == "" {
		return "", fmt.Sprintf("no %s header", c.Header)
	}
	return v, ""
}
