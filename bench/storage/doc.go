// Package storage benchmarks kplane's storage backends: create, update,
// get, list of 10k objects, watch fan-out to 100 watchers, and the memory
// each stored object costs. The benchmarks live in storage_test.go; see
// bench/README.md for the numbers and the command that reproduces them.
package storage
