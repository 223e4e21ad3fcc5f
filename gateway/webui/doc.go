// Package webui serves the browser UI of the gateway: the dashboard, the terminal page
// and their bundled scripts and styles, embedded in the binary.
//
// # Entry point
//
// [Handler] answers:
//
//   - GET / with the dashboard;
//   - GET /t/{sandbox}/{terminal} with the terminal page for that terminal;
//   - GET /assets/... with the bundled JavaScript and CSS;
//
// and 404 for every other path, so the gateway mounts it as its catch-all after the API
// routes. The pages are public: they hold no data, and every API call they make carries
// the user's token (entered on the page, or passed once as ?token=).
//
// # Building the assets
//
// The files come from web/ (sources, npm lock file and an esbuild script), built by
// `make web` into dist/, which is embedded with go:embed. The built dist/ is committed,
// so a binary built without a checkout (go install) has the UI too; the build is
// deterministic, and CI rebuilds it and fails when the committed copy is stale against
// web/. A tree without the bundle still builds: its UI routes answer 503 with
// "web assets not built: run make web", and [Available] reports false.
//
// # Caveats
//
// The pages use only same-origin URLs (/v1/..., /assets/...), so any node of a cluster
// can serve them and forwards their API, SSE and WebSocket requests to the sandbox's
// owner. They must be served at the root of the origin, not under a path prefix.
package webui
