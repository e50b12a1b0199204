package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkLog reads the logger's CRI log (`<time> <stream> <P|F> <text>` lines,
// partial lines joined) and checks that its numbered lines run 1, 2, 3, ...
// with none missing, none repeated.
func (s *soak) checkLog(p *pod) {
	path := filepath.Join(p.logDir, "logger.log")
	b, err := os.ReadFile(path)
	if err != nil {
		s.find.add("lost-line", "pod %s: logger log %s: %v", p.name, path, err)
		return
	}
	n, problem := numberedLines(b)
	s.lines.Add(int64(n))
	s.logsChecked.Add(1)
	if problem != "" {
		s.find.add("lost-line", "pod %s (%s): %s: %s", p.name, short(p.id), path, problem)
	} else if n == 0 {
		s.find.add("lost-line", "pod %s (%s): %s holds no line", p.name, short(p.id), path)
	}
}

// numberedLines returns how many "soak line N" lines b holds, and what is
// wrong with their sequence ("" when nothing). A last line without its
// newline is still being written and not counted.
func numberedLines(b []byte) (int, string) {
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	next, partial := 1, ""
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 3 {
			return next - 1, fmt.Sprintf("malformed CRI log line %q", sc.Text())
		}
		text := ""
		if len(f) == 4 {
			text = f[3]
		}
		if f[2] == "P" {
			partial += text
			continue
		}
		text, partial = partial+text, ""
		got, err := strconv.Atoi(strings.TrimPrefix(text, "soak line "))
		if err != nil || !strings.HasPrefix(text, "soak line ") {
			return next - 1, fmt.Sprintf("line %d is %q", next, text)
		}
		if got != next {
			return next - 1, fmt.Sprintf("line %d is number %d (%d lost)", next, got, got-next)
		}
		next++
	}
	return next - 1, ""
}
