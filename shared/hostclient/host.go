package hostclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/picomq/heavy-sinks/internal/hostopt"
)

// Host is a running picomq_host process.
type Host struct {
	cfg    config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *stderrBuffer
	logs   logBook

	abiMajor, abiMinor uint32

	nextID   atomic.Uint64
	rr       atomic.Uint32
	inflight []atomic.Int64 // requests sent and not answered, per worker

	wmu sync.Mutex // serialises frame writes to stdin

	mu      sync.Mutex
	pending map[uint64]*pending
	closing bool
	reason  string     // why the client ended the process, if it did
	exitErr *ExitError // set once the process is gone

	hello     chan hello
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type pending struct {
	ch     chan response
	worker int
}

// Option configures Start. The options that only tests use (running the
// host under valgrind, its quarantine size) are in internal/testenv/hosttest.
type Option func(*config)

// config is the internal hostopt.Start so that hosttest can add options.
type config = hostopt.Start[LogLine]

// Workers sets the number of host worker threads that call into plugins.
// Default 4, at most 256.
func Workers(n int) Option { return func(c *config) { c.Workers = n } }

// Env adds "KEY=value" entries to the host's environment, which is otherwise
// this process's: for example the
// PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD> overrides plugins read.
func Env(kv ...string) Option { return func(c *config) { c.Env = append(c.Env, kv...) } }

// Stderr copies everything the host writes to stderr (the host's own
// messages, plugins logging without a callback, Go crash reports) to w as
// well. By default it is only kept for ExitError and Host.Stderr.
func Stderr(w io.Writer) Option { return func(c *config) { c.Stderr = w } }

// OnLog calls fn with each captured log line, in order, from the goroutine
// that reads the host's output; fn must not block or call the Host.
func OnLog(fn func(LogLine)) Option { return func(c *config) { c.OnLog = fn } }

// KeepLogs sets how many log lines the Host keeps; older ones are dropped.
// Default 100000.
func KeepLogs(n int) Option { return func(c *config) { c.KeepLogs = n } }

// ExitTimeout sets how long Close waits for the host to finish its queued
// requests, close leftover instances and exit before killing it. Default 30s.
func ExitTimeout(d time.Duration) Option { return func(c *config) { c.ExitTimeout = d } }

// Start starts the host binary (dist/picomq-host, or one hosttest.Build
// built) and waits for its HELLO frame.
// ctx bounds the start only, as with net.Dialer.DialContext: the process
// runs until Close or Kill.
func Start(ctx context.Context, binary string, opts ...Option) (*Host, error) {
	cfg := config{Workers: 4, KeepLogs: 100000, ExitTimeout: 30 * time.Second, Quarantine: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Workers < 1 || cfg.Workers > 256 {
		return nil, fmt.Errorf("hostclient: Workers(%d) out of range [1, 256]", cfg.Workers)
	}
	args := []string{binary, "-w", strconv.Itoa(cfg.Workers)}
	if cfg.Quarantine >= 0 {
		args = append(args, "-q", strconv.Itoa(cfg.Quarantine))
	}
	args = append(append([]string(nil), cfg.Wrapper...), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	// A process group of its own, so that kill also reaches the children of
	// a wrapper (hosttest.Wrapper), which would otherwise hold stdout open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h := &Host{
		cfg:      cfg,
		cmd:      cmd,
		stderr:   &stderrBuffer{tee: cfg.Stderr},
		inflight: make([]atomic.Int64, cfg.Workers),
		pending:  make(map[uint64]*pending),
		hello:    make(chan hello, 1),
		done:     make(chan struct{}),
	}
	h.logs.max = cfg.KeepLogs
	h.logs.notify = make(chan struct{})
	cmd.Stderr = h.stderr
	// The request pipe by hand rather than cmd.StdinPipe, to size it.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("hostclient: %w", err)
	}
	growPipe(stdin)
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("hostclient: %w", err)
	}
	err = cmd.Start()
	stdinR.Close() // the child has its copy
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("hostclient: starting %s: %w", binary, err)
	}
	h.stdin = stdin
	go h.readLoop(stdout)

	select {
	case hi := <-h.hello:
		if hi.version != protocolVersion || hi.workers != uint32(cfg.Workers) {
			h.kill("unexpected HELLO")
			<-h.done
			return nil, fmt.Errorf("hostclient: %s speaks protocol %d with %d workers, want protocol %d with %d",
				binary, hi.version, hi.workers, protocolVersion, cfg.Workers)
		}
		h.abiMajor, h.abiMinor = hi.major, hi.minor
		return h, nil
	case <-h.done:
		return nil, h.exitErr
	case <-ctx.Done():
		h.kill("start cancelled")
		<-h.done
		return nil, fmt.Errorf("hostclient: starting %s: %w", binary, ctx.Err())
	}
}

// Workers returns the number of host worker threads.
func (h *Host) Workers() int { return len(h.inflight) }

// ABI returns the ABI version the host was built against, which Load
// passes to picomq_sink_plugin_init.
func (h *Host) ABI() (major, minor uint32) { return h.abiMajor, h.abiMinor }

// Pid returns the host's process id.
func (h *Host) Pid() int { return h.cmd.Process.Pid }

// Done is closed once the host process has exited and every call has
// returned.
func (h *Host) Done() <-chan struct{} { return h.done }

// Err returns nil while the host runs and its *ExitError once it has
// exited, cleanly or not.
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exitErr == nil {
		return nil
	}
	return h.exitErr
}

// Stderr returns the start and the end of what the host wrote to stderr so
// far. It is copied from a pipe as it comes: a line the host wrote just now
// may not be there yet, but everything is once Done is closed.
func (h *Host) Stderr() string { return h.stderr.String() }

// Close closes the host's stdin and waits for it to exit: it finishes the
// requests it has, closes every instance still open, and exits 0. Close
// kills it after ExitTimeout. Calls made after Close began return ErrClosed.
// Close returns nil for a clean exit, else the *ExitError (also when the
// host had died earlier). It is safe to call more than once.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closing = true
		h.mu.Unlock()
		h.wmu.Lock()
		_ = h.stdin.Close()
		h.wmu.Unlock()
		timer := time.NewTimer(h.cfg.ExitTimeout)
		defer timer.Stop()
		select {
		case <-h.done:
		case <-timer.C:
			h.kill(fmt.Sprintf("killed: no exit within %v of Close", h.cfg.ExitTimeout))
			<-h.done
		}
		if !h.exitErr.clean() {
			h.closeErr = h.exitErr
		}
	})
	return h.closeErr
}

// Kill kills the host process (and its process group) and waits until
// every call has returned.
func (h *Host) Kill() {
	h.kill("killed by Kill")
	<-h.done
}

func (h *Host) kill(reason string) {
	h.mu.Lock()
	if h.reason == "" && h.exitErr == nil {
		h.reason = reason
	}
	h.mu.Unlock()
	if err := h.cmd.Process.Kill(); errors.Is(err, os.ErrProcessDone) {
		return // reaped: its pid, and so its group id, may be another's now
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
}

// readLoop reads the host's frames until the stream ends, then reaps the
// process and fails every pending call.
func (h *Host) readLoop(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		body, err := readFrame(br)
		if err == nil {
			err = h.dispatch(body)
		} else if !errors.Is(err, errBadFrame) {
			break // end of output: the host is gone
		}
		if err != nil {
			h.kill("protocol error: " + err.Error())
			break
		}
	}
	waitErr := h.cmd.Wait()
	// Our end of the request pipe (cmd.Wait closes only what exec opened).
	h.wmu.Lock()
	_ = h.stdin.Close()
	h.wmu.Unlock()

	h.mu.Lock()
	e := &ExitError{Reason: h.reason, Stderr: h.stderr.String(), ProcessState: h.cmd.ProcessState}
	if e.ProcessState != nil {
		e.State = e.ProcessState.String()
	} else {
		e.State = waitErr.Error()
	}
	h.exitErr = e
	ps := h.pending
	h.pending = nil
	h.mu.Unlock()
	for _, p := range ps {
		p.ch <- response{err: e}
	}
	close(h.done)
}

// dispatch routes one frame from the host: the decoding is protocol.go's.
func (h *Host) dispatch(body []byte) error {
	switch body[0] {
	case kindHello:
		hi, err := decodeHello(body)
		if err != nil {
			return err
		}
		select {
		case h.hello <- hi:
		default:
			return errors.New("second HELLO frame")
		}
	case kindResponse:
		id, r, err := decodeResponse(body)
		if err != nil {
			return err
		}
		h.mu.Lock()
		p := h.pending[id]
		delete(h.pending, id)
		h.mu.Unlock()
		if p == nil {
			return fmt.Errorf("response to unknown request %d", id)
		}
		if p.worker < len(h.inflight) {
			h.inflight[p.worker].Add(-1)
		}
		p.ch <- r
	case kindLog:
		l, err := decodeLog(body)
		if err != nil {
			return err
		}
		h.logs.add(l)
		if h.cfg.OnLog != nil {
			h.cfg.OnLog(l)
		}
	default:
		return fmt.Errorf("unknown frame kind %d", body[0])
	}
	return nil
}

// pickWorker returns the least busy worker, counted as in flight already.
func (h *Host) pickWorker() int {
	n := len(h.inflight)
	for {
		start := int(h.rr.Add(1) % uint32(n))
		best, load := start, h.inflight[start].Load()
		for i := 1; i < n && load > 0; i++ {
			j := (start + i) % n
			if v := h.inflight[j].Load(); v < load {
				best, load = j, v
			}
		}
		if h.inflight[best].CompareAndSwap(load, load+1) {
			return best
		}
	}
}

// call sends one request and waits for its response. fill appends the op's
// fields; it gets the request id, which OPEN uses as the log context.
func (h *Host) call(o op, cc *callConfig, fill func(e *encoder, id uint64)) (response, error) {
	w := cc.Worker
	if w > math.MaxUint32 {
		return response{}, fmt.Errorf("hostclient: %s: worker %d out of range", o, w)
	}
	if w < 0 {
		w = h.pickWorker()
	} else if w < len(h.inflight) {
		h.inflight[w].Add(1)
	}
	done := func() {
		if w < len(h.inflight) {
			h.inflight[w].Add(-1)
		}
	}
	id := h.nextID.Add(1)
	e := newRequest(id, uint32(w), o)
	fill(e, id)
	frame, err := e.frame()
	if err != nil {
		done()
		return response{}, fmt.Errorf("hostclient: %s: %w", o, err)
	}
	// The write below is synchronous: the pipe keeps no reference to frame.
	defer e.release()

	p := &pending{ch: make(chan response, 1), worker: w}
	h.mu.Lock()
	switch {
	case h.closing:
		err = ErrClosed
	case h.exitErr != nil:
		err = h.exitErr
	default:
		h.pending[id] = p
	}
	h.mu.Unlock()
	if err != nil {
		done()
		return response{}, err
	}

	h.wmu.Lock()
	_, err = h.stdin.Write(frame)
	h.wmu.Unlock()
	if err != nil {
		h.mu.Lock()
		_, mine := h.pending[id]
		delete(h.pending, id)
		switch {
		case h.closing:
			err = ErrClosed
		case h.exitErr != nil:
			err = h.exitErr
		default:
			err = fmt.Errorf("hostclient: %s: sending: %w", o, err)
		}
		h.mu.Unlock()
		if mine {
			done()
			return response{}, err
		}
		// The read loop has answered it already (with the exit error).
	}

	// On cancellation the request stays pending: the host still runs it,
	// and its response keeps the worker's in-flight count right.
	select {
	case r := <-p.ch:
		return r, r.err
	case <-cc.Ctx.Done():
		return response{}, fmt.Errorf("hostclient: %s: %w", o, cc.Ctx.Err())
	}
}

// stderrBuffer keeps the first headMax and the last tailMax bytes written
// to it, and copies everything to tee.
type stderrBuffer struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte
	elided  int64
	tee     io.Writer
	teeDead bool
}

const (
	headMax = 4 << 10
	tailMax = 8 << 10
)

func (b *stderrBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := p
	if n := min(len(q), headMax-len(b.head)); n > 0 {
		b.head = append(b.head, q[:n]...)
		q = q[n:]
	}
	b.tail = append(b.tail, q...)
	if over := len(b.tail) - tailMax; over > 0 {
		b.elided += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	if b.tee != nil && !b.teeDead {
		if _, err := b.tee.Write(p); err != nil {
			b.teeDead = true
		}
	}
	return len(p), nil
}

func (b *stderrBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.elided == 0 {
		return string(b.head) + string(b.tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes ...]\n%s", b.head, b.elided, b.tail)
}
