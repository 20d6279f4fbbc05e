// Command bareserver is the baseline of the request-path benchmark
// (bench/reqpath): a bare net/http server answering GET requests with
// fixed JSON bodies read from files at start-up, each with Content-Type and
// Content-Length and one Write, and nothing else: no authentication, no
// extra headers, no log.
//
//	bareserver -addr 127.0.0.1:0 /api/v1/auth/me=me.json /api/v1/config/me/effective=effective.json
//
// With -contract-headers it also writes the six headers rootcause's API
// contract puts on an authenticated answer (X-Request-Id, a fresh random id
// each time; X-Rootcause-Version; X-Ratelimit-Limit, -Remaining and -Reset;
// X-Content-Type-Options), so that the cost of those headers can be told
// apart from the rest of the product's request path. With -validators as
// well it also writes the three the effective config's answer adds (ETag,
// the body's tag as rootcause makes it; Vary; Cache-Control): the whole
// header section of rootcause's answer, for effective_headers.
//
// It prints "listening on ADDR" on stdout once it accepts connections.
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
	contract := flag.Bool("contract-headers", false, "also write the six headers of rootcause's API contract")
	validators := flag.Bool("validators", false, "also write the effective config's validators (ETag, Vary, Cache-Control), with -contract-headers")
	flag.Parse()
	type answer struct {
		body   []byte
		length string
		etag   string // a strong tag of the body, as rootcause's (sha256, 18 bytes, base64url)
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
		sum := sha256.Sum256(bytes.TrimSuffix(body, []byte("\n")))
		answers[path] = answer{body, strconv.Itoa(len(body)), `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		if *contract {
			var id [16]byte
			rand.Read(id[:])
			h.Set("X-Request-Id", hex.EncodeToString(id[:]))
			h.Set("X-Rootcause-Version", "dev")
			h.Set("X-Ratelimit-Limit", "1000000000")
			h.Set("X-Ratelimit-Remaining", "999999999")
			h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Unix()+60, 10))
			h.Set("X-Content-Type-Options", "nosniff")
			if *validators {
				h.Set("Cache-Control", "private, no-cache")
				h.Set("Etag", a.etag)
				h.Set("Vary", "Accept-Encoding")
			}
		}
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
