// Command hostile is what a process of a sandbox could try against the
// keeper, its init and channel: it runs each attempt and prints one line
// per attempt, "NAME: refused (ERROR)" or "NAME: SUCCEEDED". The keeper
// tests run it inside a Docker sandbox as root (with no capability, as
// every command there) and require every line to say refused.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
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
	if len(os.Args) > 1 && os.Args[1] == "forkloop" {
		forkLoop()
	}
	if len(os.Args) > 1 && os.Args[1] == "hog" {
		hog()
	}
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

// forkLoop is a fork bomb that stops at the sandbox's pids limit and holds
// it: it starts sleeps until a fork fails with EAGAIN, says "full" once,
// and then keeps taking every pid that comes free. One P and its threads
// made first, so the bomb itself survives the limit it creates.
func forkLoop() {
	runtime.GOMAXPROCS(1)
	full := false
	for {
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "100000"}, &os.ProcAttr{})
		if err == nil {
			_ = p.Release()
			continue
		}
		if !full {
			full = true
			fmt.Println("full")
		}
		time.Sleep(time.Millisecond)
	}
}

// hog touches 768 MiB and waits: a process that takes the kernel a while
// to tear down once killed (its exit unmaps all of it).
func hog() {
	const size = 768 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Println("mmap:", err)
		os.Exit(1)
	}
	for i := 0; i < size; i += 4096 {
		mem[i] = 1
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
	}
}
