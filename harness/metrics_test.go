package harness_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// TestRun_Metrics: a scrape in the middle of a run under pause-client
// returns the documented series with live values; the endpoint is gone
// when the run ends; a bad address is a configuration error.
func TestRun_Metrics(t *testing.T) {
	testutil.RequireRedis(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	cfg := harness.Config{Lock: "setnx", OutDir: t.TempDir(), Metrics: addr,
		Workload: workload.Config{Clients: 20, Keys: 3, Duration: 4 * time.Second, TTL: 200 * time.Millisecond, Hold: 100 * time.Millisecond, Seed: 1},
		Nemesis:  nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: 2 * time.Second},
		Check:    checker.Options{Timeout: time.Minute}}
	// Scraped until the fault's window is open and acquires have come
	// (the events: a busy machine can take seconds to start the run),
	// or the run ends; the last scrape is the one checked.
	scraped, ended := make(chan string, 1), make(chan struct{})
	go func() {
		body := "no scrape answered"
		defer func() { scraped <- body }()
		for {
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
				if strings.Contains(body, `lockcheck_faults_active{fault="pause-client"} 1`+"\n") &&
					regexp.MustCompile(`(?m)^lockcheck_ops_total\{f="acquire",type="ok"\} [1-9]`).MatchString(body) {
					return
				}
			}
			select {
			case <-ended:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	_, err := harness.Run(context.Background(), cfg)
	close(ended)
	if err != nil {
		t.Fatal(err)
	}
	body := <-scraped
	value := func(series string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("no %s in the scrape:\n%s", series, body)
			return -1
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	if v := value(`lockcheck_ops_total{f="acquire",type="ok"}`); v <= 0 {
		t.Errorf("acquires ok %v, want some by mid-run", v)
	}
	if v := value(`lockcheck_op_latency_seconds_count{f="acquire",type="ok"}`); v <= 0 {
		t.Errorf("acquire latency count %v, want some", v)
	}
	if v := value(`lockcheck_faults_active{fault="pause-client"}`); v != 1 {
		t.Errorf("pause-client active %v mid-window, want 1", v)
	}
	if v := value(`lockcheck_clients_paused_total`); v < 0 {
		t.Errorf("paused %v", v)
	}
	// More than the 3 keys is possible: a paused holder's lease that
	// expired still counts until it releases.
	if v := value(`lockcheck_leases_live`); v < 0 || v > 20 {
		t.Errorf("live leases %v, want 0 to 20 (the clients)", v)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("the endpoint still answers after the run")
	}
	cfg.Metrics = "9464"
	if _, err := harness.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("--metrics 9464: got %v, want a configuration error", err)
	}
}
