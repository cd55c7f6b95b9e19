// Command ingressbench runs the dev stack's ingress alone, every route
// pointing at one upstream, so a load test measures the proxy and not the
// services behind it.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"

	"quarters.dev/pkg/routes"
	"quarters.dev/tools/devstack/ingress"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18083", "ingress listen address")
	upstream := flag.String("upstream", "127.0.0.1:18081", "address every service route is sent to")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address (profiling the proxy under load)")
	standard := flag.Bool("standard-transport", false, "send through net/http's Transport instead of the ingress's connection pool")
	flag.Parse()
	if *pprofAddr != "" {
		go func() { log.Println(http.ListenAndServe(*pprofAddr, nil)) }()
	}
	table, err := routes.Default(true)
	if err != nil {
		log.Fatal(err)
	}
	in := ingress.New(table, ingress.Options{StandardTransport: *standard})
	for _, name := range table.Services() {
		in.SetUpstream(name, *upstream)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(in.Server(log.New(os.Stderr, "ingress: ", log.LstdFlags)).Serve(ln))
}
