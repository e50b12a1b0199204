// Command registry serves an offline OCI registry on 127.0.0.1 with
// busybox-based stand-ins for the images critest v1.37.0 uses, under their
// original repository paths (registry.k8s.io/e2e-test-images/busybox:1.36.1-1
// is served as <addr>/e2e-test-images/busybox:1.36.1-1), so that a
// hosts.toml mirror for each registry makes the original names resolve.
//
//	go run ./test/registry -addr 127.0.0.1:5000 -hosts-dir /etc/minicri/certs.d
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/minicri/minicri/test/registry/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "address to listen on (loopback only)")
	cache := flag.String("images", fixture.DefaultCacheDir, `cache of built layer blobs ("-" for none)`)
	deb := flag.String("busybox-deb", "", "busybox .deb to build from (default: cached, else apt-get download busybox)")
	hostsDir := flag.String("hosts-dir", "", "if set, write <dir>/<registry>/hosts.toml mirroring "+fmt.Sprint(fixture.MirroredRegistries)+" to this registry")
	bench := flag.Bool("bench", true, "also publish "+fixture.BenchRef+" (~100 MB)")
	bench1g := flag.Bool("bench1g", false, "also publish "+fixture.Bench1GRef+" (1 GiB, 10 layers)")
	lazyBench := flag.Bool("lazy-bench", false, "also publish "+fixture.LazyBenchSmallRef+" (eStargz, 10 layers)")
	lazyBench1G := flag.Bool("lazy-bench-1g", false, "also publish "+fixture.LazyBench1GRef+" (eStargz, 1 GiB, 10 layers)")
	latency := flag.Duration("latency", 0, "delay every request's answer this long (make bench-lazy: 20ms)")
	rate := flag.Int64("rate", 0, "bytes a second each response is limited to, 0: no limit (make bench-lazy: 100000000)")
	e2eDir := flag.String("e2e-images", "", "if set, also publish the conformance suite's images, built with the agnhost binary and files in this directory (test/conformance/tools.sh)")
	eStargz := flag.Bool("estargz", false, "publish every image in eStargz form, each layer annotated with its TOC digest (the same references: minicri's lazy pulls mount them)")
	verbose := flag.Bool("v", false, "log registry requests")
	flag.Parse()
	log.SetFlags(log.Ltime)

	entries, err := fixture.BuildCatalog(fixture.CatalogOptions{CacheDir: *cache, DebPath: *deb, Bench: *bench, Bench1G: *bench1g,
		LazyBench: *lazyBench, LazyBench1G: *lazyBench1G, E2EDir: *e2eDir, EStargz: *eStargz, Logf: log.Printf})
	if err != nil {
		log.Fatalf("build images: %v", err)
	}
	opts := fixture.Options{Latency: *latency, Rate: *rate}
	if *verbose {
		opts.Logger = log.New(os.Stderr, "registry: ", log.Ltime)
	}
	srv, err := fixture.Start(*addr, opts)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Publish(entries); err != nil {
		log.Fatalf("publish: %v", err)
	}
	if *hostsDir != "" {
		if err := fixture.WriteHostsDir(*hostsDir, srv.URL); err != nil {
			log.Fatalf("hosts dir: %v", err)
		}
		log.Printf("wrote hosts.toml files under %s", *hostsDir)
	}
	refs := make([]string, 0, len(entries))
	for _, e := range entries {
		refs = append(refs, e.Ref+" -> "+srv.Ref(e.Ref))
	}
	sort.Strings(refs)
	for _, r := range refs {
		fmt.Println(r)
	}
	log.Printf("serving %d references on %s", len(entries), srv.URL)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = srv.Close()
}
