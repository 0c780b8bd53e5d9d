// Package etcd holds side-by-side benchmarks of kplane's storage backends:
// the in-memory backend, etcd embedded in the process, and etcd behind the
// watch cache (pkg/storage/cacher). See bench/README.md for the numbers.
package etcd
