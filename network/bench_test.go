package network

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSetupTeardown measures one pod's Setup and Teardown on the
// built-in network, one at a time. The "-unpinFirst" cases remove the netns
// pin before Teardown, as a caller may do for the default network.
// Run as root:
//
//	go test -run '^$' -bench SetupTeardown -benchtime 20x ./network/
func BenchmarkSetupTeardown(b *testing.B) {
	requireRoot(b)
	hostPort := []PortMapping{{HostPort: 18940, ContainerPort: 8080, Protocol: "tcp"}}
	for _, bc := range []struct {
		name       string
		pms        []PortMapping
		unpinFirst bool // remove the netns pin before Teardown (default network only)
	}{
		{"noHostPort", nil, false},
		{"hostPort", hostPort, false},
		{"noHostPort-unpinFirst", nil, true},
		{"hostPort-unpinFirst", hostPort, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newTestEnv(b, nil)
			ctx := context.Background()
			// Warm up: creates the bridge and portmap's shared chains.
			warm, wns := e.newPod(b, bc.pms...)
			if _, err := e.m.Setup(ctx, warm); err != nil {
				b.Fatal(err)
			}
			if err := e.m.Teardown(ctx, warm); err != nil {
				b.Fatal(err)
			}
			_ = wns.Remove()

			var setup, teardown time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pod, ns := e.newPod(b, bc.pms...)
				b.StartTimer()
				t0 := time.Now()
				if _, err := e.m.Setup(ctx, pod); err != nil {
					b.Fatal(err)
				}
				if bc.unpinFirst {
					b.StopTimer()
					_ = ns.Remove()
					b.StartTimer()
				}
				t1 := time.Now()
				if err := e.m.Teardown(ctx, pod); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				setup += t1.Sub(t0)
				teardown += t2.Sub(t1)
				b.StopTimer()
				_ = ns.Remove()
				b.StartTimer()
			}
			b.ReportMetric(float64(setup.Microseconds())/1000/float64(b.N), "setup-ms/op")
			b.ReportMetric(float64(teardown.Microseconds())/1000/float64(b.N), "teardown-ms/op")
		})
	}
}
