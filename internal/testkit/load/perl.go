package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The Perl client runs as one process per client: the script
// (scripts/load-client.pl is ours) is started as
//
//	perl SCRIPT --trackers a,b --domain D --class C --size N --prefix P (--iterations N | --seconds S)
//
// connects, prints "ready", waits for a line on its stdin, then runs the
// workload, printing each iteration's duration in microseconds on a line
// of its own and "done" at the end; a failure goes to stderr with a
// non-zero exit. The clock starts when every process is ready, so Perl's
// start-up is not measured.

func perlClients(ctx context.Context, cfg Config, addrs []string, clients int) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  *bufio.Scanner
		stderr strings.Builder
		waited bool
		err    error
	}
	wait := func(p *proc) error {
		if !p.waited {
			_ = p.stdin.Close()
			p.waited, p.err = true, p.cmd.Wait()
		}
		return p.err
	}
	prefix := "perl-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var procs []*proc
	defer func() {
		for _, p := range procs {
			_ = wait(p)
		}
	}()
	for i := range clients {
		args := []string{cfg.PerlClient, "--trackers", strings.Join(addrs, ","), "--domain", Domain,
			"--class", Class, "--size", strconv.Itoa(FileSize), "--prefix", fmt.Sprintf("%s-%d", prefix, i)}
		if cfg.Duration > 0 {
			args = append(args, "--seconds", strconv.FormatFloat(cfg.Duration.Seconds(), 'f', 3, 64))
		} else {
			n := cfg.Iterations / clients
			if i < cfg.Iterations%clients {
				n++
			}
			if n == 0 {
				continue
			}
			args = append(args, "--iterations", strconv.Itoa(n))
		}
		p := &proc{cmd: exec.CommandContext(ctx, "perl", args...)}
		p.cmd.Stderr = &p.stderr
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return Result{}, err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return Result{}, err
		}
		if err := p.cmd.Start(); err != nil {
			return Result{}, fmt.Errorf("load: perl client: %w", err)
		}
		p.lines = bufio.NewScanner(out)
		procs = append(procs, p)
	}
	fail := func(p *proc, what string) error {
		werr := wait(p)
		return fmt.Errorf("load: perl client %s: %w; stderr: %s", what, errors.Join(werr, p.lines.Err()), strings.TrimSpace(p.stderr.String()))
	}
	for _, p := range procs {
		if !p.lines.Scan() || p.lines.Text() != "ready" {
			return Result{}, fail(p, "did not get ready")
		}
	}
	r := &run{start: time.Now()}
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return Result{}, fail(p, "start")
		}
	}
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() {
			for p.lines.Scan() {
				line := p.lines.Text()
				if line == "done" {
					errs <- nil
					return
				}
				us, err := strconv.ParseInt(line, 10, 64)
				if err != nil {
					errs <- fmt.Errorf("load: perl client printed %q", line)
					return
				}
				r.add(time.Duration(us) * time.Microsecond)
			}
			errs <- fail(p, "ended early")
		}()
	}
	var err error
	for range procs {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return Result{}, err
	}
	return r.result(), nil
}
