// Package featuregatetest builds feature gates for tests of components that
// take featuregate.Gates, so that each test states the gates it runs with
// instead of sharing a mutable registry. The Gates it returns are frozen:
// immutable and safe to share between parallel tests.
package featuregatetest
