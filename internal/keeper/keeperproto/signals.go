package keeperproto

import (
	"strconv"
	"strings"
)

// signalNumbers are the signals a client may send by name, with Linux's
// numbers (the same on amd64 and arm64). Shared, so the client refuses a
// name the keeper would not know instead of the keeper dropping it.
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8,
	"KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
	"STKFLT": 16, "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22,
	"URG": 23, "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29,
	"PWR": 30, "SYS": 31,
}

// SignalNumber parses "SIGTERM", "TERM", "term" or "15".
func SignalNumber(name string) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n > 0 && n < 65
	}
	n, ok := signalNumbers[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	return n, ok
}

// SignalName is "SIG" and the name of signal n, or "SIG" and its number.
func SignalName(n int) string {
	for name, num := range signalNumbers {
		if num == n {
			return "SIG" + name
		}
	}
	return "SIG" + strconv.Itoa(n)
}
