package leaderelection_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/leaderelection"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// Two replicas of a controller compete for one Lease. The first leads;
// when it shuts down it releases the Lease and the second takes over at
// once.
func Example() {
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	c, _ := client.New(client.Config{Host: ts.URL})
	defer c.CloseIdleConnections()

	replica := func(id string, leading chan<- string) (*leaderelection.Elector, error) {
		lock, err := leaderelection.NewLeaseLock(leaderelection.LeaseLockConfig{
			Client: c, Namespace: "kube-system", Name: "example-controller", Identity: id,
		})
		if err != nil {
			return nil, err
		}
		return leaderelection.New(leaderelection.Config{
			Lock:            lock,
			ReleaseOnCancel: true,
			// A short retry period for the example; the defaults are 15s, 10s, 2s.
			LeaseDuration: 10 * time.Second,
			RenewDeadline: 5 * time.Second,
			RetryPeriod:   500 * time.Millisecond,
			Callbacks: leaderelection.Callbacks{
				OnStartedLeading: func(ctx context.Context) {
					leading <- id
					<-ctx.Done() // run the controllers until leadership ends
				},
				OnStoppedLeading: func() { fmt.Println(id, "stopped leading") },
			},
		})
	}

	leading := make(chan string)
	a, _ := replica("replica-a", leading)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error)
	go func() { doneA <- a.Run(ctxA) }()
	fmt.Println(<-leading, "leads")

	b, _ := replica("replica-b", leading)
	ctxB, stopB := context.WithCancel(context.Background())
	doneB := make(chan error)
	go func() { doneB <- b.Run(ctxB) }()

	stopA() // replica-a shuts down and releases the lease
	fmt.Println("replica-a Run:", <-doneA)
	fmt.Println(<-leading, "leads")
	stopB()
	fmt.Println("replica-b Run:", <-doneB)
	// Output:
	// replica-a leads
	// replica-a stopped leading
	// replica-a Run: <nil>
	// replica-b leads
	// replica-b stopped leading
	// replica-b Run: <nil>
}
