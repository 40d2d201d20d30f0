package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// spawned are agent processes the coordinator started itself
// (Config.Spawn): clients on this machine, in processes of their
// own, through the same protocol as agents elsewhere.
type spawned struct {
	bin, addr, token, dir string

	mu   sync.Mutex
	cmds []*exec.Cmd
	logs []*os.File
	done []chan struct{}
	idx  []int
}

// spawnAgents starts n agents of bin joining addr, each logging to
// agents/agent-<i>.log in dir. They die with this process (Pdeathsig).
func spawnAgents(bin, addr, token, dir string, n int) (*spawned, error) {
	s := &spawned{bin: bin, addr: addr, token: token, dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		return nil, err
	}
	for i := range n {
		if err := s.start(i); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// start starts agent i (again, after kill: its log goes on).
func (s *spawned) start(i int) error {
	log, err := os.OpenFile(filepath.Join(s.dir, "agents", "agent-"+strconv.Itoa(i)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "agent", "--join", s.addr, "--index", strconv.Itoa(i))
	cmd.Env = append(os.Environ(), "LOCKCHECK_AGENT_TOKEN="+s.token)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("spawn agent %d (%s): %w", i, s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmds, s.logs, s.done, s.idx = append(s.cmds, cmd), append(s.logs, log), append(s.done, done), append(s.idx, i)
	s.mu.Unlock()
	return nil
}

// kill SIGKILLs agent i's running process; false if there is none.
func (s *spawned) kill(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := len(s.cmds) - 1; j >= 0; j-- {
		if s.idx[j] == i {
			select {
			case <-s.done[j]:
				return false
			default:
			}
			return s.cmds[j].Process.Kill() == nil
		}
	}
	return false
}

// restart starts agent i again once its process is gone.
func (s *spawned) restart(i int) error {
	s.mu.Lock()
	var done chan struct{}
	for j := range s.cmds {
		if s.idx[j] == i {
			done = s.done[j]
		}
	}
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	return s.start(i)
}

// stop waits a little for each agent to end by itself (the coordinator
// closed its connection), then kills it by its pid.
func (s *spawned) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// One deadline for them all, which every wait sees (a channel from
	// time.After would be drained by the first agent that outlived it).
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	expired := false
	for i, cmd := range s.cmds {
		if !expired {
			select {
			case <-s.done[i]:
				continue
			case <-deadline.C:
				expired = true
			}
		}
		_ = cmd.Process.Kill() // a no-op error for one that ended
		<-s.done[i]
	}
	for _, l := range s.logs {
		l.Close()
	}
}
