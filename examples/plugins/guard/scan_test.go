package main

import (
	"strings"
	"testing"
)

// naiveFind is what find must answer: the first listed entry the joined command contains.
func naiveFind(list, args []string) (string, bool) {
	line := strings.Join(args, " ")
	for _, e := range list {
		if strings.Contains(line, e) {
			return e, true
		}
	}
	return "", false
}

// TestFind is not parallel: it changes the deny-list.
func TestFind(t *testing.T) {
	lists := [][]string{{"mkfs", ":(){"}, {"rm -rf /", "curl", "x"}, {"a long entry spanning blocks"}}
	commands := [][]string{
		{""}, {"ls", "-la"}, {"sh", "-c", "ls -la | wc -l"}, {"mkfs"}, {"sh", "-c", "mkfs.ext4 /dev/sda"},
		{"sh", "-c", ":(){ :|:& };: ; mkfs"}, {"rm", "-rf", "/"}, {"12345678", "rm", "-rf", "/x"},
		{"1234567", "curl"}, {"123456789012345", "curl"}, {"a long entry", "spanning", "blocks"},
		{"a long entry", "spanning", "block"}, {"xx"}, {strings.Repeat("y", 100) + "x"},
	}
	for _, list := range lists {
		denied = list
		index(list)
		for _, args := range commands {
			var n int
			cmd, n = join(cmd[:0], args)
			e, ok := find(cmd, n)
			we, wok := naiveFind(list, args)
			if e != we || ok != wok {
				t.Errorf("list %q, command %q: got %q, %v; want %q, %v", list, args, e, ok, we, wok)
			}
		}
	}
	denied = []string{"mkfs", ":(){"}
	index(denied)
}
