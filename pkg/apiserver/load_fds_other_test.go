//go:build !unix

package apiserver

// openFileLimit is unknown here.
func openFileLimit() uint64 { return 0 }
