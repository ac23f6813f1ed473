// Command exporter is a stand-in for an application that Prometheus scrapes in the analysis
// tests: it counts requests and errors at a steady pace, with an error rate a test sets.
//
//	exporter -listen 127.0.0.1:0 -error-rate 0.1
//
// It prints "listening on ADDR" once it serves, then:
//
//	GET /metrics                   demo_requests_total and demo_errors_total
//	PUT /error-rate?value=0.25     set the share of requests that fail, from 0 to 1
//
// Every tick (100ms) it counts 100 requests, of which error-rate × 100 (rounded) fail, so
// rate(demo_errors_total[…]) / rate(demo_requests_total[…]) is the error rate set.
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const perTick = 100

type app struct {
	mu        sync.Mutex
	errorRate float64

	requests, errors prometheus.Counter
}

func (a *app) tick() {
	a.mu.Lock()
	failed := math.Round(a.errorRate * perTick)
	a.mu.Unlock()
	a.requests.Add(perTick)
	a.errors.Add(failed)
}

func (a *app) setErrorRate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		http.Error(w, "use PUT", http.StatusMethodNotAllowed)
		return
	}
	v, err := strconv.ParseFloat(r.URL.Query().Get("value"), 64)
	if err != nil || v < 0 || v > 1 {
		http.Error(w, "value must be a number from 0 to 1", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.errorRate = v
	a.mu.Unlock()
	fmt.Fprintf(w, "error rate %g\n", v)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	rate := flag.Float64("error-rate", 0, "initial share of requests that fail, from 0 to 1")
	flag.Parse()

	reg := prometheus.NewRegistry()
	a := &app{
		errorRate: *rate,
		requests:  prometheus.NewCounter(prometheus.CounterOpts{Name: "demo_requests_total", Help: "Requests served."}),
		errors:    prometheus.NewCounter(prometheus.CounterOpts{Name: "demo_errors_total", Help: "Requests that failed."}),
	}
	reg.MustRegister(a.requests, a.errors)

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/error-rate", a.setErrorRate)
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			a.tick()
		}
	}()
	fmt.Printf("listening on %s\n", l.Addr())
	log.Fatal(http.Serve(l, mux))
}
