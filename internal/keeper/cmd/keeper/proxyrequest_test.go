package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadProxyRequest(t *testing.T) {
	cases := []struct {
		name, in   string
		connect    bool
		host       string
		port       int
		head, fail string
	}{
		{name: "connect", in: "CONNECT pypi.example:443 HTTP/1.1\r\nHost: pypi.example:443\r\n\r\n", connect: true, host: "pypi.example", port: 443},
		{name: "connect ipv6", in: "CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", connect: true, host: "::1", port: 8443},
		{name: "plain default port", in: "GET http://a.example/x?y=1 HTTP/1.1\r\nHost: a.example\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n",
			host: "a.example", port: 80, head: "GET /x?y=1 HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"},
		{name: "plain with port", in: "POST http://10.0.0.1:8080/ HTTP/1.0\nContent-Length: 2\n\nhi", host: "10.0.0.1", port: 8080,
			head: "POST / HTTP/1.0\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"},
		{name: "origin form refused", in: "GET / HTTP/1.1\r\n\r\n", fail: "absolute http://"},
		{name: "https URL refused", in: "GET https://a.example/ HTTP/1.1\r\n\r\n", fail: "absolute http://"},
		{name: "connect without port", in: "CONNECT a.example HTTP/1.1\r\n\r\n", fail: "host:port"},
		{name: "bad port", in: "CONNECT a.example:0 HTTP/1.1\r\n\r\n", fail: "bad port"},
		{name: "not http", in: "SSH-2.0-OpenSSH\r\n\r\n", fail: "not an HTTP/1"},
		{name: "head too large", in: "GET http://a/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxProxyHead) + "\r\n\r\n", fail: "too large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := readProxyRequest(bufio.NewReader(strings.NewReader(tc.in)))
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("err = %v, want one containing %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.connect != tc.connect || req.host != tc.host || req.port != tc.port || req.head != tc.head {
				t.Fatalf("got %+v, want connect=%v host=%q port=%d head=%q", req, tc.connect, tc.host, tc.port, tc.head)
			}
		})
	}
}
