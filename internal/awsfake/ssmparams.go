package awsfake

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
)

// SSMParameters adds GetParameter to the SSM fake: the Parameter Store the Lambda function
// reads its config from. Other SSM operations go to the Run Command fake.
type SSMParameters struct {
	*SSM
	mu     sync.Mutex
	params map[string]string
}

// SSMParameters returns the server's Parameter Store fake, registering it on first use.
func (s *Server) SSMParameters() *SSMParameters {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.services["ssm"].(*SSMParameters); ok {
		return p
	}
	p := &SSMParameters{SSM: s.SSM, params: map[string]string{}}
	s.services["ssm"] = p
	return p
}

// Put stores a parameter.
func (p *SSMParameters) Put(name, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.params[name] = value
}

func (p *SSMParameters) serve(w http.ResponseWriter, action string, v url.Values, body []byte) {
	if action != "GetParameter" {
		p.SSM.serve(w, action, v, body)
		return
	}
	var in struct{ Name string }
	json.Unmarshal(body, &in)
	p.mu.Lock()
	value, ok := p.params[in.Name]
	p.mu.Unlock()
	if !ok {
		p.fail(w, 400, "ParameterNotFound", "")
		return
	}
	p.answer(w, map[string]any{"Parameter": map[string]any{"Name": in.Name, "Type": "SecureString", "Value": value, "Version": 1}})
}
