// Command markergen writes the openapi package's table of Kubernetes'
// OpenAPI comment markers (+listType, +listMapKey, +mapType, +structType,
// +default), read from the Go sources of the API modules that go.mod
// selects. It is run by go generate in pkg/apiserver/openapi:
//
//	go run ./internal/markergen -o zz_generated_markers.go
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/kplane/kplane/pkg/apiserver/openapi/internal/markers"
)

func main() {
	out := flag.String("o", "zz_generated_markers.go", "file to write")
	flag.Parse()
	src, err := markers.Generate(context.Background(), ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "markergen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "markergen:", err)
		os.Exit(1)
	}
}
