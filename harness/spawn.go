package harness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// spawned are agent processes the coordinator started itself
// (Config.SpawnAgents): clients on this machine, in processes of their
// own, through the same protocol as agents elsewhere.
type spawned struct {
	cmds []*exec.Cmd
	logs []*os.File
	done []chan struct{}
}

// randomToken is a token for agents the coordinator spawns itself.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// spawnAgents starts n agents of bin joining addr, each logging to
// agents/agent-<i>.log in dir. They die with this process (Pdeathsig).
func spawnAgents(bin, addr, token, dir string, n int) (*spawned, error) {
	s := &spawned{}
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		return nil, err
	}
	for i := range n {
		log, err := os.Create(filepath.Join(dir, "agents", "agent-"+strconv.Itoa(i)+".log"))
		if err != nil {
			s.stop()
			return nil, err
		}
		cmd := exec.Command(bin, "agent", "--join", addr, "--index", strconv.Itoa(i))
		cmd.Env = append(os.Environ(), "LOCKCHECK_AGENT_TOKEN="+token)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			log.Close()
			s.stop()
			return nil, fmt.Errorf("spawn agent %d (%s): %w", i, bin, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		s.cmds, s.logs, s.done = append(s.cmds, cmd), append(s.logs, log), append(s.done, done)
	}
	return s, nil
}

// stop waits a little for each agent to end by itself (the coordinator
// closed its connection), then kills it by its pid.
func (s *spawned) stop() {
	if s == nil {
		return
	}
	deadline := time.After(10 * time.Second)
	for i, cmd := range s.cmds {
		select {
		case <-s.done[i]:
		case <-deadline:
			_ = cmd.Process.Kill()
			<-s.done[i]
		}
	}
	for _, l := range s.logs {
		l.Close()
	}
}
