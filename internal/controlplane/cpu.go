package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// CPUTimes returns the CPU time (user plus system) each running component has used since it
// started, by component name, read from /proc. A benchmark that takes it before and after a
// burst sees which process the burst kept busy: on a machine with few cores, wall time says
// little about where the work went.
func (c *ControlPlane) CPUTimes() (map[string]time.Duration, error) {
	c.mu.Lock()
	procs := c.processes
	c.mu.Unlock()
	out := make(map[string]time.Duration, len(procs))
	for _, p := range procs {
		if p.cmd.Process == nil {
			continue
		}
		select {
		case <-p.done:
			continue
		default:
		}
		d, err := ProcessCPUTime(p.cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		out[p.name] += d
	}
	return out, nil
}

// ProcessCPUTime is the user plus system CPU time process pid has used, from /proc/<pid>/stat.
func ProcessCPUTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces; the fields after it are
	// state (3) … utime (14), stime (15).
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(raw[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
