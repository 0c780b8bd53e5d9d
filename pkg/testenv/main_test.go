package testenv

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// TestFiftyParallelEnvironments wants its 50 parallel subtests alive
	// at once; the default -parallel (GOMAXPROCS) would run them two at a
	// time. An explicit -parallel is respected.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "64"); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}
