package streaming

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// Containers is what the streaming server needs of the container manager.
type Containers interface {
	Exec(ctx context.Context, id string, cmd []string, sio container.StreamIO) (int32, error)
	Attach(ctx context.Context, id string, sio container.StreamIO) error
}

// Pods is what the streaming server needs of the sandbox manager.
type Pods interface {
	Get(id string) (sandbox.Info, error)
}

// runtime implements streaming.Runtime.
type runtime struct {
	containers Containers
	pods       Pods
	log        *slog.Logger
}

// Exec runs cmd in the container; a non-zero exit is reported as the
// library's exit error, which carries the code to the client.
func (r *runtime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	sio := streamIO(ctx, in, out, errOut, tty, resize)
	code, err := r.containers.Exec(ctx, id, cmd, sio)
	if err != nil {
		r.log.Info("exec session failed", "container", id, "err", err)
		return err
	}
	r.log.Debug("exec session ended", "container", id, "exit_code", code)
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with code %d", cmd, code), Code: int(code)}
	}
	return nil
}

// Attach connects the streams to the running container's stdio.
func (r *runtime) Attach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	err := r.containers.Attach(ctx, id, streamIO(ctx, in, out, errOut, tty, resize))
	if err != nil {
		r.log.Info("attach session failed", "container", id, "err", err)
		return err
	}
	r.log.Debug("attach session ended", "container", id)
	return nil
}

// streamIO converts the library's streams; absent ones stay nil.
func streamIO(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) container.StreamIO {
	sio := container.StreamIO{TTY: tty, Resize: sizes(ctx, resize)}
	if in != nil {
		sio.Stdin = in
	}
	if out != nil {
		sio.Stdout = out
	}
	if errOut != nil {
		sio.Stderr = errOut
	}
	return sio
}

// sizes relays resize events until either side is done.
func sizes(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan container.TermSize {
	if in == nil {
		return nil
	}
	out := make(chan container.TermSize)
	go func() {
		defer close(out)
		for {
			select {
			case sz, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- container.TermSize{Width: sz.Width, Height: sz.Height}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
