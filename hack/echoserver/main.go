// A tiny static HTTP server for tests on tether's real nodes (packed as localhost/tether-echoserver).
//
//	echoserver            serve on :$PORT (default 8080); answers "hello from <hostname>", logs each request
//	echoserver hostname   print the hostname and exit (for `kubectl exec`)
//
// It exits at once on SIGTERM (PID 1 in its container ignores signals it does not handle).
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	host, _ := os.Hostname()
	if len(os.Args) > 1 && os.Args[1] == "hostname" {
		fmt.Println(host)
		return
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		os.Exit(0)
	}()
	srv := &http.Server{
		Addr:              ":" + port,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log.Printf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
			fmt.Fprintf(w, "hello from %s\n", host)
		}),
	}
	log.Printf("listening on :%s", port)
	log.Fatal(srv.ListenAndServe())
}
