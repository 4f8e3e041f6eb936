package admin

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestOpenAPIDocument(t *testing.T) {
	docs, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, OpenAPI) {
		t.Fatal("docs/openapi.yaml differs from internal/admin/openapi.yaml: copy one over the other")
	}
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	served := []string{"GET /api/v1/openapi.yaml", "GET /livez", "GET /readyz"}
	for _, r := range (&Server{}).apiRoutes() {
		served = append(served, r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("the OpenAPI document lists\n%s\nthe server serves\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}
