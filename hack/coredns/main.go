// CoreDNS for tether's real nodes (packed as localhost/tether-coredns): the cluster DNS a node's
// pods resolve Service names with. Built from the Go module proxy at the release go.mod pins, with
// only the plugins a local cluster needs. There is no upstream resolver and no forward plugin: a
// node namespace reaches nothing but its host end, so the Corefile (src/localenv/node-dns.ts)
// answers names outside the cluster zones with NXDOMAIN (template) instead of waiting on a resolver
// that cannot answer.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// The plugins a Corefile may name, in CoreDNS's own execution order (core/dnsserver/zdirectives.go).
var directives = []string{
	"ready",
	"health",
	"errors",
	"loadbalance",
	"cache",
	"template",
	"kubernetes",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
