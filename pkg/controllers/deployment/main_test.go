package deployment

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newFakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Now()) }
