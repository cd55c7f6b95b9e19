// Command upstream is the benchmark's bare Go HTTP server: it answers every
// request with the same small JSON body, the baseline the proxies are
// measured against.
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	bodyFile := flag.String("body-file", "", "answer with this file's bytes instead of the built-in body")
	flag.Parse()
	body := []byte(`{"listings":[{"id":"l_1","nickname":"Canal loft","active":true,"pricing":{"currency":"EUR","monthlyRateCents":185000}}]}`)
	if *bodyFile != "" {
		b, err := os.ReadFile(*bodyFile)
		if err != nil {
			log.Fatal(err)
		}
		body = b
	}
	length := []string{strconv.Itoa(len(body))}
	jsonType := []string{"application/json"}
	noStore := []string{"no-store"}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr["Content-Type"] = jsonType
		hdr["Cache-Control"] = noStore
		hdr["Content-Length"] = length
		w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
