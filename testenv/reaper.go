package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// reaperScript is a POSIX shell that outlives the test binary by design: it
// reads "pid N" and "dir D" lines on its standard input, and when that input
// ends without a "done" line, because the test process died (a panic, a
// timeout, a kill), it kills the recorded process groups and every process
// whose command line names the directory D, and then removes D. Every process
// of the control plane names D (etcd's data directory, the API server's
// certificate directory, the controller manager's kubeconfig), so one killed
// while it was still starting, before its pid was recorded, goes too. It
// ignores the signals that a terminal's Ctrl-C sends to the whole foreground
// group, so that it is still there to do its job.
const reaperScript = `trap '' INT TERM HUP QUIT
pids=""; dir=""
while IFS= read -r line; do
  case "$line" in
    done) exit 0 ;;
    "pid "*) pids="$pids ${line#pid }" ;;
    "dir "*) dir="${line#dir }" ;;
  esac
done
for p in $pids; do kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done
[ -n "$dir" ] || exit 0
procs() {
  if [ -d /proc/self ]; then
    for f in /proc/[0-9]*/cmdline; do
      p=${f#/proc/}; p=${p%/cmdline}
      printf '%s ' "$p"; tr '\000' ' ' < "$f" 2>/dev/null; echo
    done
  else
    ps -A -o pid= -o args=
  fi
}
for round in 1 2 3; do
  list=$(procs)
  echo "$list" | while read -r p rest; do
    case "$rest" in *"$dir"*) [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null ;; esac
  done
  sleep 0.3
done
rm -rf -- "$dir"
`

// reaper makes sure that the control plane's processes die with the test
// process, whatever way it dies. envtest starts etcd and kube-apiserver in
// process groups of their own, so neither a panic nor a terminal's Ctrl-C
// reaches them.
type reaper struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
}

func startReaper() (*reaper, error) {
	cmd := exec.Command("/bin/sh", "-c", reaperScript)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("testenv: starting the process reaper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting the process reaper: %w", err)
	}
	return &reaper{cmd: cmd, in: in}, nil
}

func (r *reaper) send(line string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in == nil {
		return nil
	}
	_, err := io.WriteString(r.in, line+"\n")
	return err
}

// watch records a process (its group, when it leads one) to kill.
func (r *reaper) watch(pid int) error { return r.send("pid " + strconv.Itoa(pid)) }

// removeOnDeath records the directory to remove after the kill.
func (r *reaper) removeOnDeath(dir string) error { return r.send("dir " + dir) }

// release tells the reaper that everything was stopped cleanly.
func (r *reaper) release() error {
	if err := r.send("done"); err != nil {
		return err
	}
	r.mu.Lock()
	in := r.in
	r.in = nil
	r.mu.Unlock()
	in.Close()
	return r.cmd.Wait()
}

// namesDir reports whether process pid's command line names dir, as every
// process of an environment names its temporary directory; true where that
// cannot be told (no /proc), so that a process is watched rather than missed.
func namesDir(pid int, dir string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return true
	}
	return bytes.Contains(cmdline, []byte(dir))
}

// commLen is the length to which Linux truncates a command name in
// /proc/<pid>/stat (TASK_COMM_LEN less its NUL).
const commLen = 15

// childProcesses lists the processes whose parent is this one and whose
// command name is one of names.
func childProcesses(names ...string) ([]int, error) {
	self := os.Getpid()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
		want[n[:min(len(n), commLen)]] = true
	}
	var pids []int
	if stats, err := filepath.Glob("/proc/[0-9]*/stat"); err == nil && len(stats) > 0 {
		for _, f := range stats {
			data, err := os.ReadFile(f)
			if err != nil {
				continue // gone meanwhile
			}
			// pid (comm) state ppid ...; comm may hold spaces and parentheses.
			open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
			if open < 0 || end < open {
				continue
			}
			fields := strings.Fields(string(data[end+1:]))
			if len(fields) < 2 {
				continue
			}
			ppid, _ := strconv.Atoi(fields[1])
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data[:open])))
			if ppid == self && want[string(data[open+1:end])] {
				pids = append(pids, pid)
			}
		}
		return pids, nil
	}
	// No /proc (macOS): ask ps.
	out, err := exec.Command("ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "comm=").Output()
	if err != nil {
		return nil, fmt.Errorf("listing child processes: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		ppid, _ := strconv.Atoi(f[1])
		if ppid == self && want[filepath.Base(strings.Join(f[2:], " "))] {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
