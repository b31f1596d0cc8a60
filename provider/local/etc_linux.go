//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// etcDir is the sandbox's generated /etc, in its private directory (next
// to root/, so nothing of the sandbox can change it).
const etcDir = "etc"

// hostEtcShared are the entries of the host's /etc an isolated sandbox
// sees, read-only: what the machine's toolchains and libraries read (the
// dynamic linker's cache, CA certificates, time zone, locale, shells'
// profiles, alternatives, language runtimes' settings). It is a list of
// what is needed, not of what is secret: the host's accounts (passwd,
// shadow, group, sudoers), its keys (ssh, ssl/private), its package
// sources and their credentials (apt), its host name and machine id are
// never shown, whatever else the host keeps there. A name with a "*" is a
// glob within /etc.
var hostEtcShared = []string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
	"localtime", "timezone", "locale.alias", "locale.gen", "locale.conf", "default/locale",
	"nsswitch.conf", "host.conf", "gai.conf", "protocols", "services", "rpc", "ethertypes", "networks",
	"mime.types", "magic", "magic.mime", "mailcap",
	"profile", "profile.d", "bash.bashrc", "bash_completion", "bash_completion.d", "inputrc", "shells", "skel", "terminfo",
	"login.defs", "os-release", "lsb-release", "debian_version", "issue", "manpath.config",
	"perl", "python3", "python3.*", "java-*", "maven", "vim", "gitconfig", "pip.conf", "npmrc", "wgetrc", "fonts", "xml", "sgml",
}

// hostEtcNetwork are shown only when the sandbox shares the host's network
// (spec.network "host"): without a network, a resolver is a lie.
var hostEtcNetwork = []string{"resolv.conf"}

// etcBind is one host /etc entry bound into the generated /etc.
type etcBind struct {
	src string // host path, links resolved
	rel string // path below /etc
}

// hostEtcEntries resolves the shared list against this host: which exist,
// and where they point. A link is followed on the host: its target may lie
// where the sandbox sees nothing (/run/systemd/resolve/...).
func hostEtcEntries(network bool) []etcBind {
	names := hostEtcShared
	if network {
		names = append(append([]string{}, names...), hostEtcNetwork...)
	}
	var out []etcBind
	for _, name := range names {
		matches := []string{filepath.Join("/etc", name)}
		if strings.Contains(name, "*") {
			matches, _ = filepath.Glob(filepath.Join("/etc", name))
		}
		for _, m := range matches {
			real, err := filepath.EvalSymlinks(m)
			if err != nil {
				continue
			}
			if _, err := os.Stat(real); err == nil {
				out = append(out, etcBind{src: real, rel: strings.TrimPrefix(m, "/etc/")})
			}
		}
	}
	return out
}

// prepareEtc writes the sandbox's /etc into dir: passwd and group with root,
// the resident's own user and nobody; hosts naming the sandbox; mtab; and an
// empty mount point for each shared host entry, which etcMountArgs binds
// over it. It is rewritten at every start of the sandbox's init, so a host
// that installed a toolchain since is seen by the next sandbox start.
func prepareEtc(dir string, shared []etcBind) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"passwd": passwdFile(),
		"group":  groupFile(),
		"hosts":  "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + sandboxHostname + "\n",
	}
	for name, content := range files {
		if err := writeFileAtomic(dir, name, []byte(content), 0o644); err != nil {
			return fmt.Errorf("etc/%s: %w", name, err)
		}
	}
	if err := os.Symlink("/proc/self/mounts", filepath.Join(dir, "mtab")); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("etc/mtab: %w", err)
	}
	for _, b := range shared {
		if err := mountPointLike(b.src, filepath.Join(dir, b.rel)); err != nil {
			return fmt.Errorf("etc/%s: %w", b.rel, err)
		}
	}
	return nil
}

// mountPointLike makes an empty file or directory at dst, as src is.
func mountPointLike(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.IsDir() {
		if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// etcMountArgs are bwrap's options for the sandbox's /etc: the generated
// directory, then each shared host entry over its mount point.
func etcMountArgs(dir string, shared []etcBind) []string {
	args := []string{"--ro-bind", dir, "/etc"}
	for _, b := range shared {
		args = append(args, "--ro-bind", b.src, "/etc/"+b.rel)
	}
	return args
}

// sandboxHostname is every isolated sandbox's host name (its own UTS
// namespace).
const sandboxHostname = "sandbox"

// sandboxShell is the login shell of the generated accounts.
const sandboxShell = "/bin/sh"

// sandboxUsers are the generated accounts: root, the user the resident
// runs as (whose files the sandbox's directory holds) and nobody. Home is
// "/", as HOME is.
func sandboxUsers() [][2]string { // name, "uid:gid"
	users := [][2]string{{"root", "0:0"}}
	uid, gid := os.Getuid(), os.Getgid()
	if uid != 0 {
		name := "resident"
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && validAccountName(u.Username) {
			name = u.Username
		}
		users = append(users, [2]string{name, strconv.Itoa(uid) + ":" + strconv.Itoa(gid)})
	}
	if uid != 65534 {
		users = append(users, [2]string{"nobody", "65534:65534"})
	}
	return users
}

func passwdFile() string {
	var b strings.Builder
	for _, u := range sandboxUsers() {
		uid, gid, _ := strings.Cut(u[1], ":")
		shell := sandboxShell
		if u[0] == "nobody" {
			shell = "/usr/sbin/nologin"
		}
		fmt.Fprintf(&b, "%s:x:%s:%s:%s:/:%s\n", u[0], uid, gid, u[0], shell)
	}
	return b.String()
}

func groupFile() string {
	var b strings.Builder
	for _, u := range sandboxUsers() {
		_, gid, _ := strings.Cut(u[1], ":")
		name := u[0]
		if name == "nobody" {
			name = "nogroup"
		}
		fmt.Fprintf(&b, "%s:x:%s:\n", name, gid)
	}
	return b.String()
}

// validAccountName keeps a host user name that could break the passwd
// format out of it.
func validAccountName(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
