package channel

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// A terminal exec: output on stdout, stdin open, Resize changes the size
// the command sees.
func TestTTYAndResize(t *testing.T) {
	c, _ := openStdio(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh"}, Env: append([]string{"PS1="}, testEnv...), TTY: &WindowSize{Rows: 30, Cols: 100}})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(e.Stdout())
	expect := func(want string) {
		t.Helper()
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for %q: %v", want, err)
			}
			if strings.TrimSpace(line) == want {
				return
			}
		}
	}
	if _, err := io.WriteString(e.Stdin(), "test -t 0 && echo is-a-tty; stty size\n"); err != nil {
		t.Fatal(err)
	}
	expect("is-a-tty")
	expect("30 100")
	if err := e.Resize(40, 120); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(e.Stdin(), "stty size; exit 5\n"); err != nil {
		t.Fatal(err)
	}
	expect("40 120")
	go io.Copy(io.Discard, out)
	st, err := e.Wait()
	if err != nil || st.Code != 5 {
		t.Fatalf("%+v %v", st, err)
	}
}
