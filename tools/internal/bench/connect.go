package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

// Connect is a picomq-connect process a bench started, with its --http
// address for /readyz and /metrics.
type Connect struct {
	cmd    *exec.Cmd
	HTTP   string // host:port of --http
	exited chan error
}

// StartConnect starts bin with args (flags, then definition files) plus
// --http on a free port, env added to this process's environment, its
// output on stderr, and waits up to 30 s for /readyz: its sinks' consumers
// started.
func StartConnect(bin string, args, env []string) (*Connect, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--http", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Connect{cmd: cmd, HTTP: addr, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	if err := c.waitReady(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Pid is the picomq-connect process's.
func (c *Connect) Pid() int { return c.cmd.Process.Pid }

// Exited is sent the process's exit once it ended on its own.
func (c *Connect) Exited() <-chan error { return c.exited }

// Hosts are its children: the picomq-host processes running its plugins.
func (c *Connect) Hosts() []int { return hosttest.Children(c.Pid()) }

// CPU is the user+sys time so far of the process and of its hosts
// (summed; a host that died is no longer counted).
func (c *Connect) CPU() (runtime, hosts time.Duration, err error) {
	if runtime, err = hosttest.ProcessCPU(c.Pid()); err != nil {
		return 0, 0, err
	}
	for _, pid := range c.Hosts() {
		h, err := hosttest.ProcessCPU(pid)
		if err != nil {
			return 0, 0, err
		}
		hosts += h
	}
	return runtime, hosts, nil
}

// PeakRSS is the peak resident set (VmHWM) of the process and the largest
// of its hosts', in KiB.
func (c *Connect) PeakRSS() (runtimeKB, hostKB int64) {
	_, runtimeKB = hosttest.ProcessMemory(c.Pid())
	for _, pid := range c.Hosts() {
		_, p := hosttest.ProcessMemory(pid)
		hostKB = max(hostKB, p)
	}
	return runtimeKB, hostKB
}

// Metrics is the text of its /metrics (Prometheus exposition).
func (c *Connect) Metrics() (string, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + c.HTTP + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("/metrics: %s", resp.Status)
	}
	return string(b), err
}

// Stop sends SIGTERM (a flush, a last commit) and waits up to 30 s, then
// kills.
func (c *Connect) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

func (c *Connect) waitReady() error {
	cl := http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-c.exited:
			c.exited <- err
			return fmt.Errorf("picomq-connect exited at start: %v", err)
		default:
		}
		if resp, err := cl.Get("http://" + c.HTTP + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("picomq-connect not ready after 30 s")
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
