package agent

import (
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/workload"
)

// Access is how clients reach a run's Redis: what a lock's Env needs of
// the cluster that can cross to another machine (an agent's plan).
type Access struct {
	Addrs            []string `json:"addrs"`
	Username         string   `json:"username,omitempty"`
	Password         string   `json:"password,omitempty"`
	Sentinels        []string `json:"sentinels,omitempty"`
	MasterName       string   `json:"master_name,omitempty"`
	SentinelPassword string   `json:"sentinel_password,omitempty"`
	Cluster          bool     `json:"cluster,omitempty"`
	Topology         string   `json:"topology"`
	// Aliases (announced address -> node address) and Proxies are for
	// agents: they dial each node by its own address, through a proxy of
	// their own if Proxies (the run's faults act through client proxies).
	Aliases map[string]string `json:"aliases,omitempty"`
	Proxies bool              `json:"proxies,omitempty"`
}

// AccessOf is how clients of this machine reach cl.
func AccessOf(cl *cluster.Cluster) Access {
	a := Access{Addrs: cl.Addrs(), Username: cl.User, Password: cl.Password, Cluster: cl.Topology == cluster.RedisCluster, Topology: cl.Topology}
	if len(cl.Sentinels) > 0 {
		a.Sentinels, a.MasterName, a.SentinelPassword = cl.SentinelAddrs(), cl.MasterName, cl.SentinelPassword()
	}
	return a
}

// ForAgents is how agents reach cl: each node by its own address (a
// proxy of this machine's is no path from theirs), announced addresses
// mapped to it, and their own client proxies if proxies.
func ForAgents(cl *cluster.Cluster, proxies bool) Access {
	a := AccessOf(cl)
	a.Addrs = nil
	for _, n := range cl.Nodes {
		a.Addrs = append(a.Addrs, n.Addr)
	}
	a.Aliases, a.Proxies = cl.Aliases(), proxies
	return a
}

// Env is a lock's Env for the clients of workload w.
func (a Access) Env(w workload.Config, now func() int64, record func(history.Op)) lockimpl.Env {
	return lockimpl.Env{Addrs: a.Addrs, Username: a.Username, Password: a.Password, KeyPrefix: w.KeyPrefix,
		PoolSize: w.Clients + 16, OpTimeout: w.OpTimeout, Now: now, Record: record, Sentinels: a.Sentinels,
		MasterName: a.MasterName, SentinelPassword: a.SentinelPassword, Cluster: a.Cluster, Topology: a.Topology}
}
