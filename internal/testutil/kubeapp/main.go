// Command kubeapp is the program of the test images testutil.StartCluster imports into its
// cluster. As `kubeapp pause` it is the pods' sandbox (pause) container: it waits for SIGTERM
// or SIGINT. Otherwise it is a web server on -listen whose readiness the test sets:
//
//	GET  /ready           200 while ready, 503 while not (the pod's readiness probe)
//	POST /ready?ok=false  not ready from now on; ?ok=true ready again
//	GET  /                200, the pod's name ($POD_NAME) and "ready" or "not ready"
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "pause" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		return
	}
	listen := flag.String("listen", ":8080", "the address to serve HTTP on")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*listen, handler(os.Getenv("POD_NAME"))))
}

// handler serves the readiness of the pod name, ready at first.
func handler(name string) http.Handler {
	var notReady atomic.Bool
	state := func() string {
		if notReady.Load() {
			return "not ready"
		}
		return "ready"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if notReady.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, state())
	})
	mux.HandleFunc("POST /ready", func(w http.ResponseWriter, r *http.Request) {
		ok, err := strconv.ParseBool(r.URL.Query().Get("ok"))
		if err != nil {
			http.Error(w, "want ?ok=true or ?ok=false", http.StatusBadRequest)
			return
		}
		notReady.Store(!ok)
		fmt.Fprintln(w, state())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, name, state()) })
	return mux
}
