package kubernetes

import (
	"context"
	"errors"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// executor streams one command in a sandbox's container through the API
// server's exec subresource: WebSocket (the v5 protocol), falling back to
// SPDY where an API server or a proxy in front of it cannot upgrade to it.
func (p *Provider) executor(podName, container string, cmd []string, tty bool) (remotecommand.Executor, error) {
	cs, cfg := p.client()
	req := cs.CoreV1().RESTClient().Post().Namespace(p.namespace).Resource("pods").Name(podName).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: true, Stdout: true, Stderr: !tty, TTY: tty}, parameterCodec())
	ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// spdyExecutor is the SPDY executor alone (Exec's retry of a stalled
// WebSocket start).
func (p *Provider) spdyExecutor(podName, container string, cmd []string, tty bool) (remotecommand.Executor, error) {
	cs, cfg := p.client()
	req := cs.CoreV1().RESTClient().Post().Namespace(p.namespace).Resource("pods").Name(podName).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: true, Stdout: true, Stderr: !tty, TTY: tty}, parameterCodec())
	return remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
}

// exitCode reads a finished stream's error: the remote command's exit
// code, or ok=false when the stream itself failed.
func exitCode(err error) (code int, ok bool) {
	if err == nil {
		return 0, true
	}
	var exitErr utilexec.CodeExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code, true
	}
	return 0, false
}

// streamCtx is the context a started exec's stream runs under: not the
// caller's (a cancelled exec is killed through the keeper, and its output
// after the kill still arrives), ended by the process itself.
func streamCtx() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
