// Command bareserver is the baseline of the request-path benchmark
// (bench/reqpath): a bare net/http server answering GET requests with
// fixed JSON bodies read from files at start-up, each with Content-Type and
// Content-Length and one Write, and nothing else: no authentication, no
// extra headers, no log.
//
//	bareserver -addr 127.0.0.1:0 /api/v1/auth/me=me.json /api/v1/config/me/effective=effective.json
//
// It prints "listening on ADDR" on stdout once it accepts connections.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP address to listen on")
	flag.Parse()
	type answer struct {
		body   []byte
		length string
	}
	answers := map[string]answer{}
	for _, arg := range flag.Args() {
		path, file, ok := strings.Cut(arg, "=")
		if !ok || !strings.HasPrefix(path, "/") {
			log.Fatalf("argument %q: want PATH=FILE", arg)
		}
		body, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		answers[path] = answer{body, strconv.Itoa(len(body))}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", a.length)
		w.Write(a.body)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
