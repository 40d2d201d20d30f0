package harness_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// externalWorkload: late releases on few hot keys, so broken-del-release
// shows double holders; light enough for TLS on two cores.
func externalWorkload(seed int64) workload.Config {
	return workload.Config{Clients: 50, Keys: 3, Duration: 4 * time.Second, TTL: 100 * time.Millisecond,
		Hold: 100 * time.Millisecond, HoldDist: workload.HoldUniform, Retry: workload.RetryNone, Seed: seed,
		Margin: 30 * time.Millisecond}
}

// forbidden are the commands lockcheck must never send to a Redis it
// does not run (INFO commandstats names).
var forbidden = []string{"cmdstat_flushall", "cmdstat_flushdb", "cmdstat_config|set", "cmdstat_debug", "cmdstat_shutdown"}

// external is a Redis the test runs and hands to lockcheck as external,
// with an admin client of its own to watch it.
type external struct {
	admins []*redis.Client // every master
	cfg    cluster.ExternalConfig
	// touched collects every key a keyspace notification named (the
	// single server only).
	mu      sync.Mutex
	touched map[string]bool
}

// snapshot is a master's key space and forbidden command counts.
type snapshot struct {
	keys  map[string]string
	stats map[string]string
}

func (x *external) snapshot(t *testing.T) []snapshot {
	t.Helper()
	ctx := context.Background()
	var out []snapshot
	for _, a := range x.admins {
		s := snapshot{keys: map[string]string{}, stats: map[string]string{}}
		keys, err := a.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			s.keys[k], _ = a.Dump(ctx, k).Result()
		}
		info, err := a.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if slices.Contains(forbidden, name) {
				s.stats[name] = v
			}
		}
		out = append(out, s)
	}
	return out
}

// seed writes keys that are not lockcheck's on every master (on a
// cluster, those of its slots), and watches every key a command touches
// there from then on (keyspace notifications).
func (x *external) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	x.touched = map[string]bool{}
	for _, a := range x.admins {
		n := 0
		for j := range 30 {
			err := a.Set(ctx, "app:"+strconv.Itoa(j), "value "+strconv.Itoa(j), 0).Err()
			if err != nil && !strings.HasPrefix(err.Error(), "MOVED") {
				t.Fatal(err)
			}
			if err == nil {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("no key of app:0..29 belongs to master %s", a.Options().Addr)
		}
		if err := a.ConfigSet(ctx, "notify-keyspace-events", "KA").Err(); err != nil {
			t.Fatal(err)
		}
		ps := a.PSubscribe(ctx, "__keyspace@0__:*")
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		go func() {
			for m := range ps.Channel() {
				x.mu.Lock()
				x.touched[strings.TrimPrefix(m.Channel, "__keyspace@0__:")] = true
				x.mu.Unlock()
			}
		}()
		t.Cleanup(func() { ps.Close() })
	}
}

// run runs lock against the external Redis and checks that it touched
// nothing but its own keys, sent no forbidden command and left nothing.
func (x *external) run(t *testing.T, lock string, w workload.Config, faults ...string) *harness.Result {
	t.Helper()
	before := x.snapshot(t)
	cfg := harness.Config{Lock: lock, OutDir: t.TempDir(), Workload: w,
		Nemesis: nemesis.Config{Faults: faults, Interval: time.Second, Duration: 500 * time.Millisecond},
		Cluster: cluster.Config{Backend: cluster.External, External: x.cfg},
		Check:   checker.Options{Timeout: 2 * time.Minute, ClockTolerance: 50 * time.Millisecond}}
	res, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run %s: %v", lock, err)
	}
	after := x.snapshot(t)
	for i := range before {
		if fmt.Sprint(before[i].keys) != fmt.Sprint(after[i].keys) {
			t.Errorf("master %d's key space changed: before %v, after %v", i, keyNames(before[i].keys), keyNames(after[i].keys))
		}
		if fmt.Sprint(before[i].stats) != fmt.Sprint(after[i].stats) {
			t.Errorf("master %d ran a forbidden command: before %v, after %v", i, before[i].stats, after[i].stats)
		}
	}
	if res.Cleaned.Prefix == "" || !strings.HasPrefix(res.Cleaned.Prefix, "lockcheck:") || res.Cleaned.Left != 0 {
		t.Errorf("cleaned %+v: want every key under a lockcheck: prefix deleted", res.Cleaned)
	}
	x.mu.Lock()
	for k := range x.touched {
		if !strings.HasPrefix(k, res.Cleaned.Prefix) {
			t.Errorf("the run touched key %q, outside its prefix %q", k, res.Cleaned.Prefix)
		}
	}
	n := len(x.touched)
	clear(x.touched)
	x.mu.Unlock()
	if n == 0 {
		t.Errorf("no keyspace notification: the watch saw nothing")
	}
	noSecret(t, res.Dir, x.cfg.Password)
	return res
}

func keyNames(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// noSecret fails if the password appears in any file under dir.
func noSecret(t *testing.T, dir, secret string) {
	t.Helper()
	if secret == "" {
		t.Fatal("no secret to look for")
	}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
}

// expectBothWays: setnx valid, broken-del-release invalid (a few seeds:
// the race is real).
func (x *external) expectBothWays(t *testing.T) {
	t.Helper()
	if res := x.run(t, "setnx", externalWorkload(1)); res.Verdict != checker.Valid {
		t.Errorf("setnx: verdict %s, want valid: %+v", res.Verdict, res.Findings.Checkers)
	}
	for seed := int64(1); ; seed++ {
		res := x.run(t, "broken-del-release", externalWorkload(seed))
		if res.Verdict == checker.Invalid {
			break
		}
		if seed == 3 {
			t.Fatalf("broken-del-release: %s in 3 runs, want invalid", res.Verdict)
		}
	}
}

// certs writes a CA and a server certificate for 127.0.0.1 and localhost
// signed by it into dir.
func certs(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockcheck test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	for p, b := range map[string]*pem.Block{ca: {Type: "CERTIFICATE", Bytes: caDER}, cert: {Type: "CERTIFICATE", Bytes: srvDER},
		key: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockUser may run what lockcheck needs, on keys under lockcheck: only.
const lockUser = "on >lockpw ~lockcheck:* resetchannels -@all +ping +info +set +get +del +pexpire +eval +evalsha +incr +scan"

// tlsRedis starts a redis-server that speaks only TLS, with an admin
// (default) user, the ACL user "locker" and "noevalsha" (the same minus
// EVALSHA), and keyspace notifications; it is stopped by its PID.
func tlsRedis(t *testing.T) *external {
	t.Helper()
	testutil.RequireRedis(t)
	dir := t.TempDir()
	ca, cert, key := certs(t, dir)
	port := freePort(t)
	conf := fmt.Sprintf("port 0\ntls-port %d\nbind 127.0.0.1\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-auth-clients no\n"+
		"requirepass adminpw\nuser locker %s\nuser noevalsha %s -evalsha\nsave \"\"\nappendonly no\ndir %s\n",
		port, cert, key, ca, lockUser, lockUser, dir)
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", filepath.Join(dir, "redis.conf"))
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(ca)
	pool.AppendCertsFromPEM(b)
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "adminpw", TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}})
	t.Cleanup(func() { admin.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for admin.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("tls redis-server does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	x := &external{admins: []*redis.Client{admin},
		cfg: cluster.ExternalConfig{Addrs: []string{addr}, User: "locker", Password: "lockpw", TLS: cluster.TLSOptions{Enabled: true, CA: ca}}}
	return x
}

// TestExternal_TLSAndACL: a Redis that speaks only TLS, reached as an
// ACL user allowed only the commands lockcheck needs on keys under
// lockcheck:*. setnx is valid, broken-del-release invalid; every key a
// keyspace notification names is under the run's prefix, the other keys
// are as they were, no forbidden command ran, nothing is left, and no
// file the run wrote holds the password.
func TestExternal_TLSAndACL(t *testing.T) {
	x := tlsRedis(t)
	x.seed(t)
	x.expectBothWays(t)
	// lost-reply through a proxy in front of the node: TLS still checks
	// the node's name, and the lost replies are indeterminate.
	res := x.run(t, "setnx", externalWorkload(1), "lost-reply")
	info := res.Summary.Ops.Get(history.Acquire, history.Info) + res.Summary.Ops.Get(history.Release, history.Info)
	if res.Verdict != checker.Valid || info == 0 {
		t.Errorf("setnx under lost-reply: verdict %s, %d indeterminate ops; want valid with some", res.Verdict, info)
	}
}

// TestExternal_Refused: each mistake is one line, an ErrConfig (exit 2),
// before any client runs.
func TestExternal_Refused(t *testing.T) {
	x := tlsRedis(t)
	w := externalWorkload(1)
	for _, tc := range []struct {
		name string
		edit func(*harness.Config)
		want string
	}{
		{"no EVALSHA", func(c *harness.Config) { c.Cluster.External.User = "noevalsha" }, "may not run EVALSHA"},
		{"wrong password", func(c *harness.Config) { c.Cluster.External.Password = "wrong" }, "refused the credentials"},
		{"unreachable", func(c *harness.Config) {
			c.Cluster.External.Addrs = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))}
		}, "does not answer"},
		{"TLS name", func(c *harness.Config) { c.Cluster.External.TLS.ServerName = "redis.example" }, "not for that name"},
		{"no TLS", func(c *harness.Config) { c.Cluster.External.TLS = cluster.TLSOptions{} }, "TLS on at one end only"},
		{"prefix outside the ACL", func(c *harness.Config) { c.Cluster.External.KeyPrefix = "app:" }, "may not touch key"},
		{"server fault", func(c *harness.Config) { c.Nemesis.Faults = []string{"kill-redis"} }, "needs a backend that runs Redis"},
		{"redlock on one node", func(c *harness.Config) { c.Lock = "redlock" }, "the external Redis given is topology single"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := harness.Config{Lock: "setnx", OutDir: t.TempDir(), Workload: w,
				Cluster: cluster.Config{Backend: cluster.External, External: x.cfg}}
			tc.edit(&cfg)
			_, err := harness.Run(context.Background(), cfg)
			if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q (ErrConfig)", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// TestExternal_Sentinel: a Sentinel set lockcheck started, handed over as
// external (--sentinel, --master-name): both ways, own keys only.
func TestExternal_Sentinel(t *testing.T) {
	testutil.RequireRedis(t)
	c := up(t, cluster.Config{Topology: cluster.Sentinel})
	m, err := c.Master(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x := &external{admins: []*redis.Client{admin(t, c, m.Addr)},
		cfg: cluster.ExternalConfig{Sentinels: c.SentinelAddrs(), MasterName: cluster.MasterName, Password: c.Password}}
	x.seed(t)
	x.expectBothWays(t)
}

// TestExternal_Cluster: a Redis Cluster lockcheck started, handed over as
// external (--cluster): both ways, fenced too (its counter in its key's
// slot and under the prefix), own keys only on every master.
func TestExternal_Cluster(t *testing.T) {
	testutil.RequireRedis(t)
	c := up(t, cluster.Config{Topology: cluster.RedisCluster})
	shards, err := c.Shards(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x := &external{cfg: cluster.ExternalConfig{ClusterAddrs: c.Addrs()[:1], Password: c.Password}}
	for _, s := range shards {
		x.admins = append(x.admins, admin(t, c, s.Master.Addr))
	}
	x.seed(t)
	x.expectBothWays(t)
	if res := x.run(t, "fenced", externalWorkload(1)); res.Verdict != checker.Valid {
		t.Errorf("fenced: verdict %s, want valid", res.Verdict)
	}
}

func up(t *testing.T, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	cfg.LogDir = t.TempDir()
	c, err := cluster.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Down(); err != nil {
			t.Error(err)
		}
		testutil.NoRedisChildren(t)
	})
	return c
}

func admin(t *testing.T, c *cluster.Cluster, addr string) *redis.Client {
	a := redis.NewClient(&redis.Options{Addr: addr, Password: c.Password})
	t.Cleanup(func() { a.Close() })
	return a
}

// TestExternal_PrefixClaimed: a prefix that already holds keys is refused
// before any client runs (one line, ErrConfig) and its keys are left as
// they were; with ReusePrefix the run goes on and deletes only the keys
// it created; two runs started at once on one server, each with the
// default prefix, get prefixes of their own and are both valid.
func TestExternal_PrefixClaimed(t *testing.T) {
	x := tlsRedis(t)
	ctx := context.Background()
	admin := x.admins[0]
	theirs := map[string]string{"lockcheck:app:1": "a", "lockcheck:app:2": "b", "lockcheck:app:3": "c"}
	for k, v := range theirs {
		if err := admin.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	intact := func(when string) {
		t.Helper()
		for k, v := range theirs {
			if got, err := admin.Get(ctx, k).Result(); err != nil || got != v {
				t.Errorf("%s: %s = %q (%v), want %q", when, k, got, err, v)
			}
		}
	}
	cfg := harness.Config{Lock: "setnx", OutDir: t.TempDir(), Workload: externalWorkload(1),
		Cluster: cluster.Config{Backend: cluster.External, External: x.cfg}, Check: checker.Options{ClockTolerance: 50 * time.Millisecond}}
	cfg.Cluster.External.KeyPrefix = "lockcheck:app:"
	_, err := harness.Run(ctx, cfg)
	if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), "already holds 3 key(s)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a prefix in use: got %v, want one line saying it holds 3 keys (ErrConfig)", err)
	}
	intact("refused")
	cfg.Cluster.External.ReusePrefix = true
	res, err := harness.Run(ctx, cfg)
	if err != nil || res.Verdict != checker.Valid || res.Cleaned.Left != 0 {
		t.Fatalf("reused prefix: %v, cleaned %+v; want valid, nothing of its own left", err, res.Cleaned)
	}
	intact("reused")
	if n, _ := admin.DBSize(ctx).Result(); n != int64(len(theirs)) {
		t.Errorf("%d keys left, want only the %d that were there", n, len(theirs))
	}

	var wg sync.WaitGroup
	results := make([]*harness.Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := harness.Config{Lock: "setnx", OutDir: t.TempDir(), Workload: externalWorkload(int64(i)),
				Cluster: cluster.Config{Backend: cluster.External, External: x.cfg}, Check: checker.Options{ClockTolerance: 50 * time.Millisecond}}
			results[i], errs[i] = harness.Run(ctx, c)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || r.Verdict != checker.Valid {
			t.Fatalf("concurrent run %d: %v %+v, want valid", i, errs[i], r)
		}
	}
	if results[0].Cleaned.Prefix == results[1].Cleaned.Prefix {
		t.Errorf("both runs used prefix %q", results[0].Cleaned.Prefix)
	}
	intact("after two runs at once")
}
