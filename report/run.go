package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RunInfo is run.json: everything needed to reproduce and re-check a run.
type RunInfo struct {
	Lockcheck   string `json:"lockcheck"`
	Lock        string `json:"lock"`
	LockVersion string `json:"lock_version,omitempty"`
	Redis       string `json:"redis"`
	Topology    string `json:"topology"`
	// Masters is the redlock or cluster topology's count of masters
	// (--nodes), which a shrink or a rerun needs (0 for the others).
	Masters        int          `json:"masters,omitempty"`
	Backend        string       `json:"backend"`
	RedisConf      []string     `json:"redis_conf,omitempty"`
	Args           []string     `json:"args,omitempty"`
	Seed           int64        `json:"seed"`
	Started        time.Time    `json:"started"`
	Workload       RunWorkload  `json:"workload"`
	Nemesis        RunNemesis   `json:"nemesis"`
	ClockTolerance string       `json:"clock_tolerance"`
	InfoHorizon    string       `json:"info_horizon"`
	CheckTimeout   string       `json:"check_timeout"`
	CheckMemory    int64        `json:"check_memory_bytes"`
	Nodes          []RunNode    `json:"nodes"`
	External       *RunExternal `json:"external,omitempty"`
	Agents         []RunAgent   `json:"agents,omitempty"`
	// NotJudged are the guarantees the run's check leaves out, with why
	// (a lock whose leases are scopes: "lease").
	NotJudged map[string]string `json:"not_judged,omitempty"`
	Extra     json.RawMessage   `json:"extra,omitempty"`
}

// RunExternal is run.json's account of an external Redis: where the
// run's keys were, the round trip that widened the clock tolerance, and
// what each server said about itself (cluster.FactNames; no secret).
type RunExternal struct {
	KeyPrefix string              `json:"key_prefix"`
	User      string              `json:"user,omitempty"`
	TLS       bool                `json:"tls"`
	RoundTrip string              `json:"round_trip"`
	Servers   []map[string]string `json:"servers"`
}

// RunAgent is run.json's account of one agent of a run on many machines:
// its clients, its clock's offset from the coordinator's (agent minus
// coordinator) with its bound and round trip, best and over time, and
// whether it was lost.
type RunAgent struct {
	Index int `json:"index"`
	// Generation counts the agent's rejoins after it was lost.
	Generation int    `json:"generation,omitempty"`
	Addr       string `json:"addr"`
	FirstProc  int    `json:"first_process"`
	Clients    int    `json:"clients"`
	OpsSent    int64  `json:"ops_received"`
	// Offset, Bound and RTT are of the measurement with the smallest
	// round trip.
	Offset string `json:"offset"`
	Bound  string `json:"bound"`
	RTT    string `json:"rtt"`
	// MaxClockBound is the widest clock_bound given to its ops.
	MaxClockBound string `json:"max_clock_bound"`
	// Clock is every measurement (at most a few hundred, evenly thinned),
	// in ns on the agent's clock.
	Clock []RunClockSample `json:"clock"`
	Lost  string           `json:"lost,omitempty"`
}

// RunClockSample is one clock measurement of an agent, in ns.
type RunClockSample struct {
	At     int64 `json:"at_ns"`
	Offset int64 `json:"offset_ns"`
	Bound  int64 `json:"bound_ns"`
	RTT    int64 `json:"rtt_ns"`
}

// RunWorkload is run.json's workload.
type RunWorkload struct {
	Clients   int    `json:"clients"`
	Keys      int    `json:"keys"`
	KeyDist   string `json:"key_dist"`
	Ops       int64  `json:"ops"`
	Duration  string `json:"duration"`
	TTL       string `json:"ttl"`
	Hold      string `json:"hold"`
	HoldDist  string `json:"hold_dist"`
	Retry     string `json:"retry"`
	Think     string `json:"think"`
	OpTimeout string `json:"op_timeout"`
	Margin    string `json:"margin"`
	// ExtendEvery is the client-side watchdog's interval, if any.
	ExtendEvery string `json:"extend_every,omitempty"`
	// Rate is the open model's arrival rate of attempts per second.
	Rate float64 `json:"rate,omitempty"`
	// SkipRelease is the fraction of sections ended without a release.
	SkipRelease float64 `json:"skip_release,omitempty"`
	// TTLFactor is the factor of ttl_advice's p99 rule (0: the default).
	TTLFactor float64 `json:"ttl_factor,omitempty"`
	// Readers is a read-write lock's chance of a read acquire (shape
	// "rwlock").
	Readers float64 `json:"readers,omitempty"`
	// Shape is the lock's shape where it is not a mutex ("semaphore",
	// "reentrant"), Permits a semaphore's permits a key, and Reenter the
	// depth a reentrant lock's holders re-entered to.
	Shape   string `json:"shape,omitempty"`
	Permits int    `json:"permits,omitempty"`
	// Wait is each acquire's wait inside the lock (--wait), if any; the
	// lock's wake-up bound is on each blocking acquire (wake_ms).
	Wait    string `json:"wait,omitempty"`
	Reenter int    `json:"reenter,omitempty"`
	// PoolPerClient is the pool of each client's own lock, if the clients
	// had one each (the pool fault).
	PoolPerClient int `json:"pool_per_client,omitempty"`
}

// RunNemesis is run.json's fault schedule.
type RunNemesis struct {
	Faults       []string `json:"faults,omitempty"`
	Interval     string   `json:"interval,omitempty"`
	Duration     string   `json:"duration,omitempty"`
	RestartDelay string   `json:"restart_delay,omitempty"`
	Persistence  string   `json:"persistence,omitempty"`
	Targets      string   `json:"targets,omitempty"`
}

// RunNode is a node of run.json: its log is relative to the run dir.
type RunNode struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	Log  string `json:"log"`
}

// WriteRunInfo writes run.json into dir.
func WriteRunInfo(dir string, info RunInfo) error {
	return writeJSON(filepath.Join(dir, "run.json"), info)
}

// WriteAgents writes dir's agents.json: the account of a run's agents,
// known only at its end (run.json is written once, at its start, so that
// a run killed outright can still be checked).
func WriteAgents(dir string, agents []RunAgent) error {
	return writeJSON(filepath.Join(dir, "agents.json"), agents)
}

// ReadRunInfo reads dir's run.json, with its agents.json as Agents, and
// returns run.json as it is on disk too (the report shows it). A dir
// without one gives a zero RunInfo.
func ReadRunInfo(dir string) (RunInfo, []byte, error) {
	var info RunInfo
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return info, nil, nil
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, nil, fmt.Errorf("%s: %v", path, err)
	}
	apath := filepath.Join(dir, "agents.json")
	if ab, err := os.ReadFile(apath); err == nil {
		if err := json.Unmarshal(ab, &info.Agents); err != nil {
			return info, nil, fmt.Errorf("%s: %v", apath, err)
		}
	}
	return info, b, nil
}

// MetaOf is what the report says about the run in dir, from its run.json
// (raw, as it is on disk).
func MetaOf(dir string, info RunInfo, raw []byte) Meta {
	meta := Meta{Lock: info.Lock, LockVersion: info.LockVersion, Redis: info.Redis, Lockcheck: info.Lockcheck, Topology: info.Topology,
		Command: shellJoin(info.Args), Config: string(raw), Nodes: map[string]string{}, External: info.External, Agents: info.Agents,
		Retry: info.Workload.Retry, TTLFactor: info.Workload.TTLFactor}
	for _, n := range info.Nodes {
		meta.Nodes[n.Name] = filepath.Join(dir, n.Log)
	}
	return meta
}

// shellJoin quotes args for a shell where needed.
func shellJoin(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./,:@%+", r))
		}) < 0 {
			b.WriteString(a)
		} else {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'")
		}
	}
	return b.String()
}
