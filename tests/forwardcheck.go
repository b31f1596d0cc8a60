package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// Fetch GETs path from a forward's address on a connection of its own (no
// keep-alive: each fetch is a new forwarded connection), failing on any
// status but 200.
func Fetch(address, path string) ([]byte, error) {
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + address + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", path, resp.Status)
	}
	return body, err
}

// FetchLen fetches url on a new connection, reading the body through
// without keeping it, and checks that it is n bytes: a timed download.
func FetchLen(url string, n int64) error {
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil && got != n {
		err = fmt.Errorf("%s: %d bytes, want %d", url, got, n)
	}
	return err
}

// CheckForwardedServer fetches pages /p1../pN at once through a forward
// (each must say "page-i"), then /big, whose bigBytes must hash to
// wantSum: the web server a forward test starts in its sandbox serves
// exactly these, on every provider.
func CheckForwardedServer(t *testing.T, address string, pages int, bigBytes int64, wantSum string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, pages)
	for i := 1; i <= pages; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := Fetch(address, fmt.Sprintf("/p%d", i))
			if err == nil && string(body) != fmt.Sprintf("page-%d\n", i) {
				err = fmt.Errorf("/p%d: got %q", i, body)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	resp, err := http.Get("http://" + address + "/big")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, resp.Body)
	resp.Body.Close()
	if err != nil || n != bigBytes {
		t.Fatalf("read %d bytes of /big: %v", n, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != wantSum {
		t.Fatalf("/big through the forward hashes to %s, in the sandbox to %s", got, wantSum)
	}
}
