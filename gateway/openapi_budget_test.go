package gateway

import (
	"encoding/json"
	"testing"

	"github.com/sandgate/sandgate/actor"
)

// TestOpenAPIBudgetDefaults: the Budget schema lists every field the server renders,
// each with the built-in default the server uses, and is the example it shows.
func TestOpenAPIBudgetDefaults(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Default any `json:"default"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["Budget"]
	enc, err := json.Marshal(renderBudget(actor.DefaultBudget()))
	if err != nil {
		t.Fatal(err)
	}
	var rendered map[string]any
	if err := json.Unmarshal(enc, &rendered); err != nil {
		t.Fatal(err)
	}
	if len(schema.Properties) != len(rendered) || len(schema.Required) != len(rendered) {
		t.Fatalf("schema has %d properties (%d required), the server renders %d: %v", len(schema.Properties), len(schema.Required), len(rendered), rendered)
	}
	for name, v := range rendered {
		p, ok := schema.Properties[name]
		if !ok || p.Default != v {
			t.Errorf("budget field %s: schema default %v (present %v), server default %v", name, p.Default, ok, v)
		}
	}
	usage := doc.Components.Schemas["Usage"]
	for _, name := range []string{"memory_bytes", "pids", "disk_bytes"} {
		if _, ok := usage.Properties[name]; !ok {
			t.Errorf("Usage schema lacks %s", name)
		}
	}
}
