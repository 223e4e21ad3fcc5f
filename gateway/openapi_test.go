package gateway

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes checks that every served route is documented and every
// documented route is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	s := &Server{}
	for _, rt := range s.routeTable() {
		served[rt.pattern] = true
	}
	for _, ui := range []string{"GET /", "GET /t/{sb}/{t}", "GET /assets/{asset}"} {
		served[ui] = true // mounted when a UI handler is configured
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("served but not documented: %v\ndocumented but not served: %v", missing, extra)
	}
}
