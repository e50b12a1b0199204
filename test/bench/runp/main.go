// Command runp times N sequential pod sandbox lifecycles against a CRI runtime:
// RunPodSandbox, PodSandboxStatus, StopPodSandbox, RemovePodSandbox.
//
//	runp -endpoint unix:///run/minicri/minicri.sock -n 20 [-hostport]
//
// It prints the median, p90, min and max latency of each RPC in milliseconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var rpcs = []string{"RunPodSandbox", "PodSandboxStatus", "StopPodSandbox", "RemovePodSandbox", "lifecycle"}

func main() {
	endpoint := flag.String("endpoint", "unix:///run/minicri/minicri.sock", "CRI endpoint")
	n := flag.Int("n", 20, "number of pod lifecycles")
	hostPort := flag.Bool("hostport", false, "give each pod a hostPort mapping (TCP, container port 80)")
	hostPortBase := flag.Int("hostport-base", 30080, "host port of the first pod; pod i gets base+i")
	timeout := flag.Duration("timeout", 2*time.Minute, "timeout of each RPC")
	flag.Parse()
	if *n < 1 {
		fail("-n must be at least 1")
	}

	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("connect %s: %v", *endpoint, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)

	ctx := context.Background()
	vctx, cancel := context.WithTimeout(ctx, *timeout)
	v, err := rt.Version(vctx, &runtimeapi.VersionRequest{})
	cancel()
	if err != nil {
		fail("Version: %v", err)
	}
	fmt.Printf("runtime %s %s (CRI %s), %d pod lifecycles, hostport=%v\n",
		v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion, *n, *hostPort)

	// call times one RPC.
	samples := map[string][]time.Duration{}
	call := func(name string, f func(context.Context) error) error {
		c, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		t := time.Now()
		err := f(c)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		samples[name] = append(samples[name], time.Since(t))
		return nil
	}

	run := fmt.Sprintf("%d", time.Now().UnixNano())
	for i := 0; i < *n; i++ {
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{
				Name:      fmt.Sprintf("runp-%s-%d", run, i),
				Uid:       fmt.Sprintf("runp-uid-%s-%d", run, i),
				Namespace: "bench",
			},
			Hostname: fmt.Sprintf("runp-%d", i),
			Labels:   map[string]string{"app": "runp"},
			Linux:    &runtimeapi.LinuxPodSandboxConfig{},
		}
		if *hostPort {
			cfg.PortMappings = []*runtimeapi.PortMapping{{
				Protocol:      runtimeapi.Protocol_TCP,
				ContainerPort: 80,
				HostPort:      int32(*hostPortBase + i),
			}}
		}
		start := time.Now()
		var id string
		err := call("RunPodSandbox", func(c context.Context) error {
			r, err := rt.RunPodSandbox(c, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			if err == nil {
				id = r.PodSandboxId
			}
			return err
		})
		if err == nil {
			err = call("PodSandboxStatus", func(c context.Context) error {
				r, err := rt.PodSandboxStatus(c, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
				if err == nil && r.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
					err = fmt.Errorf("pod %s is %v, want SANDBOX_READY", id, r.GetStatus().GetState())
				}
				return err
			})
		}
		if id != "" {
			if err2 := call("StopPodSandbox", func(c context.Context) error {
				_, err := rt.StopPodSandbox(c, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
				return err
			}); err == nil {
				err = err2
			}
			if err2 := call("RemovePodSandbox", func(c context.Context) error {
				_, err := rt.RemovePodSandbox(c, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
				return err
			}); err == nil {
				err = err2
			}
		}
		if err != nil {
			fail("pod %d: %v", i, err)
		}
		samples["lifecycle"] = append(samples["lifecycle"], time.Since(start))
	}

	fmt.Printf("%-18s %5s %9s %9s %9s %9s\n", "ms", "n", "median", "p90", "min", "max")
	for _, name := range rpcs {
		d := samples[name]
		sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
		fmt.Printf("%-18s %5d %9.1f %9.1f %9.1f %9.1f\n", name, len(d),
			ms(percentile(d, 50)), ms(percentile(d, 90)), ms(d[0]), ms(d[len(d)-1]))
	}
}

// percentile of sorted samples, nearest-rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	if k < 0 {
		k = 0
	}
	return sorted[k]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "runp: "+strings.TrimSuffix(format, "\n")+"\n", args...)
	os.Exit(1)
}
