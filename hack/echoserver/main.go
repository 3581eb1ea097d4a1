// A tiny static HTTP server for tests on tether's real nodes (packed as localhost/tether-echoserver).
//
//	echoserver            serve on :$PORT (default 8080); answers "hello from <hostname>", logs each request
//	echoserver hostname   print the hostname and exit (for `kubectl exec`)
//	echoserver get URL    print the body of an HTTP GET (a client inside a pod; 3 s timeout)
//	echoserver dial ADDR  open a TCP connection to host:port and print "connected" (3 s timeout)
//
// It exits at once on SIGTERM (PID 1 in its container ignores signals it does not handle).
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func client(host string, args []string) int {
	switch {
	case args[0] == "hostname":
		fmt.Println(host)
		return 0
	case args[0] == "get" && len(args) == 2:
		c := &http.Client{Timeout: 3 * time.Second}
		res, err := c.Get(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer res.Body.Close()
		_, _ = io.Copy(os.Stdout, res.Body)
		return 0
	case args[0] == "dial" && len(args) == 2:
		conn, err := net.DialTimeout("tcp", args[1], 3*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		conn.Close()
		fmt.Println("connected")
		return 0
	}
	fmt.Fprintln(os.Stderr, "usage: echoserver [hostname | get URL | dial HOST:PORT]")
	return 2
}

func main() {
	host, _ := os.Hostname()
	if len(os.Args) > 1 {
		os.Exit(client(host, os.Args[1:]))
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
