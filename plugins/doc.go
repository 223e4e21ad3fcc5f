// Package plugins loads, pools, calls and hot-reloads WebAssembly policy modules with
// wazero. It imports nothing of ours.
package plugins
