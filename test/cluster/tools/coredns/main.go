// Command coredns is CoreDNS with only the plugins the cluster harness uses
// (test/cluster): the kubernetes plugin for the cluster domain, forward, cache
// and the health/ready endpoints. Building it from the module proxy through
// this wrapper keeps the build small (no cloud-provider plugins).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the plugin order, a subset of CoreDNS's plugin.cfg in its order.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"kubernetes",
	"forward",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
