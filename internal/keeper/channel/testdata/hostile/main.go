// Command hostile is what a process of a sandbox could try against the
// keeper, its init and channel: it runs each attempt and prints one line
// per attempt, "NAME: refused (ERROR)" or "NAME: SUCCEEDED". The keeper
// tests run it inside a Docker sandbox as root (with no capability, as
// every command there) and require every line to say refused.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func report(name string, err error) {
	if err != nil {
		fmt.Printf("%s: refused (%v)\n", name, err)
		return
	}
	fmt.Printf("%s: SUCCEEDED\n", name)
}

func open(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0)
	if err == nil {
		f.Close()
	}
	return err
}

func main() {
	keeper := 1
	if len(os.Args) > 1 {
		keeper, _ = strconv.Atoi(os.Args[1])
	}
	p := "/proc/" + strconv.Itoa(keeper)
	report("sigkill", syscall.Kill(keeper, syscall.SIGKILL))
	report("sigterm", syscall.Kill(keeper, syscall.SIGTERM))
	report("sigstop", syscall.Kill(keeper, syscall.SIGSTOP))
	report("ptrace-attach", syscall.PtraceAttach(keeper))
	report("ptrace-seize", ptraceSeize(keeper))
	report("open-stdin-for-write", open(p+"/fd/0", os.O_WRONLY))
	report("open-stdout-for-write", open(p+"/fd/1", os.O_WRONLY))
	report("open-stdout-for-read", open(p+"/fd/1", os.O_RDONLY))
	report("open-mem", open(p+"/mem", os.O_RDWR))
	report("open-environ", open(p+"/environ", os.O_RDONLY))
	_, err := os.Readlink(p + "/fd/0")
	report("readlink-fd", err)
	_, err = os.ReadDir(p + "/fd")
	report("list-fds", err)
	report("open-task-fd", open(p+"/task/"+strconv.Itoa(keeper)+"/fd/0", os.O_WRONLY))
	report("setuid-to-keeper", syscall.Setuid(0x5ffffff0))
}

func ptraceSeize(pid int) error {
	const ptraceSeize = 0x4206
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(pid), 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
