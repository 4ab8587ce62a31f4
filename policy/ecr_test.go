package policy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/google/go-containerregistry/pkg/name"
)

// fakeECR answers DescribeRepositories (JSON 1.1 protocol) from a map of repository name to
// image tag mutability, and counts calls.
func fakeECR(t *testing.T, repos map[string]string, calls *int) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AmazonEC2ContainerRegistry_V20150921.DescribeRepositories" {
			http.Error(w, "unexpected target "+got, http.StatusBadRequest)
			return
		}
		*calls++
		var in struct {
			RegistryID      string   `json:"registryId"`
			RepositoryNames []string `json:"repositoryNames"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.RegistryID != "123456789012" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		m, ok := repos[in.RepositoryNames[0]]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"RepositoryNotFoundException","message":"The repository does not exist"}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"repositories": []map[string]any{{
			"repositoryName": in.RepositoryNames[0], "registryId": in.RegistryID, "imageTagMutability": m,
		}}})
	}))
}

func TestECRTagMutability(t *testing.T) {
	calls := 0
	srv := fakeECR(t, map[string]string{"shop/web": "MUTABLE", "shop/api": "IMMUTABLE"}, &calls)
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECR", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	digest := ResolverFunc(func(ctx context.Context, tag name.Tag) (string, error) { return testDigest, nil })
	const reg = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
	tests := []struct {
		name  string
		image string
		want  []string
	}{
		{"mutable repository", reg + "/shop/web:v1", []string{"ecr-tag-mutable", "mutable-tag"}},
		{"mutable repository, tag pinned by digest", reg + "/shop/web:v1@" + testDigest, []string{"ecr-tag-mutable"}},
		{"mutable repository, digest only", reg + "/shop/web@" + testDigest, nil},
		{"immutable repository", reg + "/shop/api:v1", []string{"mutable-tag"}},
		{"not ECR", "ghcr.io/shop/web:v1", []string{"mutable-tag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Inputs{Images: []Image{{File: "t.json", Line: 1, Column: 1, Raw: tt.image, Ref: tt.image, Where: "w"}}}
			r, err := Check(context.Background(), in, WithResolver(digest), WithTagMutability(ECRTagMutability(cfg)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Rule)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("rules = %v, want %v", got, tt.want)
			}
		})
	}

	// A repository ECR does not know is an error of the check, not a finding.
	in := &Inputs{Images: []Image{{File: "t.json", Line: 4, Column: 1, Raw: reg + "/nope:v1", Ref: reg + "/nope:v1"}}}
	_, err = Check(context.Background(), in, WithResolver(digest), WithTagMutability(ECRTagMutability(cfg)))
	var re *ResolveError
	if !errors.As(err, &re) || re.Line != 4 {
		t.Errorf("Check() error = %v, want a *ResolveError at line 4", err)
	}
}
