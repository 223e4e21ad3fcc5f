package deptest

// Layer returns the rules for one of our packages by its folder name, following the
// import direction of docs/design.md ("Packages"): runtime, plugins and cluster import
// nothing of ours; actor imports only runtime; nothing imports gateway but cmd; none
// of our production code imports the testing package (a third-party dependency may
// link it: raft's testing.go does).
func Layer(name string) Rules {
	r := Rules{
		Forbidden: map[string]string{
			Ours + "internal/leakcheck":   "test-only helper",
			Ours + "internal/deptest":     "test-only helper",
			Ours + "internal/clustertest": "test-only helper",
			Ours + "gateway":              "only cmd may import gateway",
			Ours + "cmd/":                 "nothing imports cmd",
			Ours + "examples/":            "nothing imports examples",
		},
		ForbiddenDirect: map[string]string{},
		ForbiddenInOurs: map[string]string{
			"testing": "do not use the testing package in production code",
		},
	}
	leaf := []string{"runtime", "plugins", "cluster", "actor"}
	switch name {
	case "runtime", "plugins", "cluster":
		for _, p := range leaf {
			if p != name {
				r.Forbidden[Ours+p] = name + " imports nothing of ours"
			}
		}
	case "actor":
		r.Forbidden[Ours+"plugins"] = "actor declares the Policy it needs; gateway adapts plugins"
		r.Forbidden[Ours+"cluster"] = "actor declares the ownership hook it needs"
	}
	if name == "cluster" {
		r.ForbiddenDirect["net/http"] = "cluster knows no HTTP; the gateway forwards"
	}
	return r
}
