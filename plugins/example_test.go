package plugins_test

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/plugins"
)

// Without Config.Path the Host answers with the built-in policy; with one, the same
// calls go to the plugin. This is the whole surface the gateway uses per request.
func ExampleHost() {
	h, err := plugins.New(context.Background(), &plugins.Config{
		DefaultBudget: plugins.Budget{MaxProcesses: 8},
		MaxBudget:     plugins.Budget{MaxProcesses: 16},
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	d, _ := h.Route(context.Background(), &plugins.RouteRequest{Method: "POST", Route: "POST /v1/sandboxes"})
	b, _ := h.Budget(context.Background(), &plugins.BudgetRequest{SandboxID: "dev1"})
	fmt.Println(d.Allow, d.HTTPStatus(), b.MaxProcesses)
	denied := plugins.Decision{Status: 429, Reason: "slow down"}
	fmt.Println(denied.HTTPStatus(), denied.Code())
	// Output:
	// true 200 8
	// 429 budget_exceeded
}
