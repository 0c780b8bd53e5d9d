package testenv

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEExample checks that the example in README.md's "Testing your
// controllers" section is example_readme_test.go, which compiles and runs.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- testenv example: pkg/testenv/example_readme_test.go"
	_, after, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md lacks %q", marker)
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("README.md: no go block after the marker")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md: the go block is not closed")
	}
	if block != string(example) {
		t.Errorf("README.md's example differs from example_readme_test.go; copy the file into the README")
	}
}
