package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// errUnknownUser is a user name (or group) the sandbox does not know.
type errUnknownUser struct{ spec string }

func (e errUnknownUser) Error() string {
	return fmt.Sprintf("user %q: not in the sandbox's /etc/passwd or /etc/group", e.spec)
}

// resolveUser turns an exec's user ("", a name, a uid, uid:gid or
// name:group) into who it runs as, from the sandbox's own /etc/passwd and
// /etc/group, as docker exec -u does: "" is who the keeper was started as;
// a bare uid in neither file runs with gid 0 and no supplementary groups.
// Supplementary groups are those /etc/group lists the user's name in.
func resolveUser(spec string, self identity) (identity, error) {
	if spec == "" {
		return self, nil
	}
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	id := identity{uid: -1, gid: 0}
	name := ""
	if n, err := strconv.ParseUint(userPart, 10, 31); err == nil {
		id.uid = int(n)
		if pw, ok := findPasswd(func(f []string) bool { return f[2] == userPart }); ok {
			name = pw[0]
			id.gid, _ = strconv.Atoi(pw[3])
		}
	} else {
		pw, ok := findPasswd(func(f []string) bool { return f[0] == userPart })
		if !ok {
			return id, errUnknownUser{spec}
		}
		name = pw[0]
		id.uid, _ = strconv.Atoi(pw[2])
		id.gid, _ = strconv.Atoi(pw[3])
	}
	if hasGroup {
		if n, err := strconv.ParseUint(groupPart, 10, 31); err == nil {
			id.gid = int(n)
		} else {
			gr, ok := findLine("/etc/group", 4, func(f []string) bool { return f[0] == groupPart })
			if !ok {
				return id, errUnknownUser{spec}
			}
			id.gid, _ = strconv.Atoi(gr[2])
		}
	}
	id.groups = []int{id.gid}
	if name != "" {
		forEachLine("/etc/group", 4, func(f []string) bool {
			for _, member := range strings.Split(f[3], ",") {
				if member == name {
					if g, err := strconv.Atoi(f[2]); err == nil && g != id.gid {
						id.groups = append(id.groups, g)
					}
				}
			}
			return false
		})
	}
	return id, nil
}

func findPasswd(match func([]string) bool) ([]string, bool) {
	return findLine("/etc/passwd", 7, match)
}

func findLine(path string, fields int, match func([]string) bool) ([]string, bool) {
	var found []string
	forEachLine(path, fields, func(f []string) bool {
		if match(f) {
			found = f
			return true
		}
		return false
	})
	return found, found != nil
}

// forEachLine calls fn with the colon-separated fields of each line that
// has at least that many, until fn returns true.
func forEachLine(path string, fields int, fn func([]string) bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) >= fields && fn(parts) {
			return
		}
	}
}
