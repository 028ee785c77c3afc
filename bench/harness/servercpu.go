package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ControlPlane names the control plane's processes whose CPU a phase
// reports: what the manager's requests cost the server side (a PATCH is
// applied to the stored object, a PUT replaces it; a watch event is encoded
// once per watcher).
var ControlPlane = []string{"kube-apiserver", "etcd"}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// controlPlaneCPU returns the user and system CPU time each of
// [ControlPlane]'s processes has spent, summed over the processes of that
// name that descend from this one (testenv starts them as children). It
// returns nil where /proc cannot be read (not Linux): the rows then show
// no figure.
func controlPlaneCPU() map[string]time.Duration { return descendantsCPU(ControlPlane) }

// descendantsCPU returns the CPU time spent by this process's descendants
// named (/proc/<pid>/comm) as in names, summed by name; nil where /proc
// cannot be read.
func descendantsCPU(names []string) map[string]time.Duration {
	procs := readProcs()
	if procs == nil {
		return nil
	}
	self := os.Getpid()
	out := map[string]time.Duration{}
	for pid, p := range procs {
		for _, name := range names {
			if p.comm == name && procs.descends(pid, self) {
				out[name] += p.cpu
			}
		}
	}
	return out
}

// procTable is /proc's processes by pid.
type procTable map[int]stat

// readProcs reads every process's stat line; nil where /proc cannot be
// read.
func readProcs() procTable {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := procTable{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone in between
		}
		if p, ok := parseStat(string(b)); ok {
			procs[pid] = p
		}
	}
	return procs
}

// descends reports whether pid descends from ancestor.
func (t procTable) descends(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ { // bounded: a pid reused into a loop
		pid = t[pid].ppid
		if pid == ancestor {
			return true
		}
	}
	return false
}

// stat is what the harness reads of a /proc/<pid>/stat line.
type stat struct {
	comm string
	ppid int
	cpu  time.Duration
}

// parseStat reads comm, ppid, utime and stime from a /proc/<pid>/stat
// line. comm is in parentheses and may hold spaces or parentheses itself,
// so the fields after it are found from its last ')'.
func parseStat(s string) (stat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	// After comm: state(3) ppid(4) pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime(14) stime(15).
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{comm: s[open+1 : end], ppid: ppid, cpu: time.Duration(utime+stime) * clockTick}, true
}
