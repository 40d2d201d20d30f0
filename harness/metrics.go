package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

// metrics is the live Prometheus endpoint of a run (--metrics ADDR): the
// series the README lists under "Live metrics", fed by every op the
// history records and read off the clients' counters at each scrape.
type metrics struct {
	ops     *prometheus.CounterVec
	latency *prometheus.HistogramVec
	leases  prometheus.Gauge
	faults  *prometheus.GaugeVec
	srv     *http.Server
	Addr    string
}

// metricsAddr checks --metrics: HOST:PORT, loopback when HOST is empty.
func metricsAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics %q: want [HOST]:PORT (e.g. :9464, served on 127.0.0.1)", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// startMetrics serves the run's series on addr until stop.
func startMetrics(addr string, counters *workload.Counters) (*metrics, error) {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lockcheck_ops_total",
			Help: "Ops recorded in the history, by f (acquire, release, extend, write) and type (ok, fail, info)."}, []string{"f", "type"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lockcheck_op_latency_seconds",
			Help: "Op latency, call to return, by f and type.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"f", "type"}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lockcheck_leases_live",
			Help: "Leases clients believe they hold: acquired, not yet released (one that expired under a paused holder, or a crashed holder's, counts until then: more than the keys means a stale holder)."}),
		faults: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockcheck_faults_active",
			Help: "Faults on now, by fault."}, []string{"fault"}),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.ops, m.latency, m.leases, m.faults)
	for name, v := range map[string]func(history.Unrecorded) int64{
		"lockcheck_clients_paused_total":    func(u history.Unrecorded) int64 { return u.Paused },
		"lockcheck_clients_crashed_total":   func(u history.Unrecorded) int64 { return u.Crashed },
		"lockcheck_commands_cut_off_total":  func(u history.Unrecorded) int64 { return u.CutOff },
		"lockcheck_acquires_given_up_total": func(u history.Unrecorded) int64 { return u.GiveUps },
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: "What the clients counted: " + name + "."},
			func() float64 { return float64(v(counters.Snapshot())) }))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	m.Addr = l.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = m.srv.Serve(l) }()
	return m, nil
}

// observe counts op (called for every op the history records).
func (m *metrics) observe(op *history.Op) {
	if op.F == history.Nemesis {
		if op.Value != nil {
			d := map[string]float64{"start": 1, "stop": -1}[op.Value.Phase]
			m.faults.WithLabelValues(op.Value.Fault).Add(d)
		}
		return
	}
	f, t := string(op.F), string(op.Type)
	m.ops.WithLabelValues(f, t).Inc()
	m.latency.WithLabelValues(f, t).Observe(float64(op.Return-op.Start()) / 1e9)
	switch {
	case op.F == history.Acquire && op.Type == history.OK:
		m.leases.Inc()
	case op.F == history.Release:
		m.leases.Dec()
	}
}

// stop ends the endpoint.
func (m *metrics) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = m.srv.Close()
	}
}
